"""``make run`` / ``emq_up`` and the commands around it, as real processes: start-up against an
unreachable server, Ctrl-C, a web server that fails, and no process left behind."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from emq.core import embedded
from tests.procs import ROOT, TEST_SECRET_KEY, manage, wait_for

UNREACHABLE = "redis://127.0.0.1:1/0"
NAMES = ("emq_pump", "emq_worker", "runserver", "emq_up")


def marked(mark: str) -> list[str]:
    """The command lines of live processes whose environment carries this test's mark.

    (Valkey rewrites its process title over its environment, so a test finds its server by pid file.)
    """
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            env = Path(f"/proc/{pid}/environ").read_bytes()
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if f"EMQ_TEST_MARK={mark}".encode() in env.split(b"\0") and state != "Z" and any(n in cmd for n in NAMES):
            found.append(f"{pid} {cmd}")
    return found


def valkey_alive(folder: Path) -> bool:
    """Whether the embedded Valkey of this folder still runs (by its pid file)."""
    try:
        pid = int((folder / "valkey.pid").read_text())
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, ValueError):
        return False


def listening(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def up_env(tmp_path):
    """A marked environment with its own database and embedded-Valkey folder."""
    mark = uuid.uuid4().hex
    env = {**os.environ, "EMQ_TEST_MARK": mark, "DATABASE_URL": f"sqlite:///{tmp_path}/db.sqlite3",
           "EMQ_DATA_DIR": str(tmp_path / "data"), "PYTHONUNBUFFERED": "1", "EMQ_IMPORTS": "tests.jobs",
           "DEBUG": "1", "SECRET_KEY": TEST_SECRET_KEY}  # as `make run` sets DEBUG
    env.pop("EMQ_URL", None)
    yield env
    for line in marked(mark):  # a failing test must not leave its processes running either
        print("left behind:", line)
        os.kill(int(line.split()[0]), signal.SIGKILL)
    embedded.stop(tmp_path / "data")


def test_make_run_with_an_unreachable_server_exits_at_once_and_leaves_nothing(up_env):
    venv = Path(sys.prefix)
    env = {**up_env, "EMQ_URL": UNREACHABLE}
    started = time.monotonic()
    proc = subprocess.run(["make", "-o", f"{venv}/.installed", "run", f"VENV={venv}", f"ADDR=127.0.0.1:{free_port()}"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    elapsed = time.monotonic() - started
    assert proc.returncode != 0 and elapsed < 10, (elapsed, proc.stderr[-2000:])
    said = [line for line in proc.stderr.splitlines() if "Valkey" in line]
    assert said == [f"CommandError: cannot reach Valkey at {UNREACHABLE}: Error 111 connecting to 127.0.0.1:1. "
                    "Connection refused. Start the server or set EMQ_URL to one that runs."], proc.stderr
    assert "Traceback" not in proc.stderr
    assert marked(up_env["EMQ_TEST_MARK"]) == [] and not valkey_alive(Path(up_env["EMQ_DATA_DIR"]))


def up(env: dict, *args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "manage.py", "emq_up", *args], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def read_lines(proc: subprocess.Popen) -> list[str]:
    """Every line the process writes, appended as it comes (read on a thread)."""
    import threading

    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(iter(proc.stdout.readline, "")), daemon=True)
    reader.start()
    proc.reader = reader  # join it to have every line once the process ended
    return lines


def migrate(env: dict) -> None:
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True, timeout=120)


def test_ctrl_c_stops_everything_and_the_valkey_it_started(up_env):
    migrate(up_env)
    port = free_port()
    proc = up(up_env, "--addr", f"127.0.0.1:{port}")
    lines = read_lines(proc)
    wait_for(lambda: any("Ctrl-C stops everything" in line for line in lines), timeout=60, what="the address said")
    assert len(marked(up_env["EMQ_TEST_MARK"])) == 4 and valkey_alive(Path(up_env["EMQ_DATA_DIR"]))
    assert listening(port)
    said = next(i for i, line in enumerate(lines) if "dashboard  http://" in line)  # said last: once all is up
    assert any(" up: queues=" in line for line in lines[:said]) and any("pump " in line for line in lines[:said])
    assert f"admin      http://127.0.0.1:{port}/admin/" in lines[said - 1]
    proc.send_signal(signal.SIGINT)
    proc.wait(60)
    proc.reader.join(10)
    proc.stdout.close()
    out = "".join(lines)
    assert proc.returncode == 0, out[-3000:]
    assert "stopping: waiting for" in out and "stopped the embedded Valkey" in out
    assert "Bad file descriptor" not in out and "Traceback" not in out
    assert marked(up_env["EMQ_TEST_MARK"]) == [] and not valkey_alive(Path(up_env["EMQ_DATA_DIR"]))


def test_a_valkey_found_running_is_kept_and_said_so_in_json(up_env):
    """EMQ_LOG_FORMAT=json: emq_up, its Pump and its worker write JSON lines (runserver writes its own)."""
    migrate(up_env)
    folder = Path(up_env["EMQ_DATA_DIR"])
    embedded.start(folder, persist=False)
    proc = up({**up_env, "EMQ_LOG_FORMAT": "json"}, "--addr", f"127.0.0.1:{free_port()}")
    lines = read_lines(proc)
    wait_for(lambda: {"emq.up", "emq.pump", "emq.worker"} <= loggers(lines), timeout=60, what="JSON from all three")
    proc.send_signal(signal.SIGTERM)
    proc.wait(60)
    proc.reader.join(10)
    proc.stdout.close()
    out = "".join(lines)
    assert proc.returncode == 0, out[-3000:]
    assert out.count("keeps running; stop it with: python manage.py emq server stop") == 1
    assert " INFO emq." not in out and embedded.running(folder)


def loggers(lines: list[str]) -> set[str]:
    """The loggers of the JSON lines among lines."""
    import json

    return {json.loads(line)["logger"] for line in list(lines) if line.startswith("{")}


def test_a_web_server_that_fails_makes_emq_up_fail(up_env):
    migrate(up_env)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        proc = up(up_env, "--addr", f"127.0.0.1:{taken.getsockname()[1]}")
        out, _ = proc.communicate(timeout=90)
    assert proc.returncode == 1, out[-3000:]
    assert "web exited with code 1; stopped the rest" in out
    assert marked(up_env["EMQ_TEST_MARK"]) == [] and not valkey_alive(Path(up_env["EMQ_DATA_DIR"]))


@pytest.mark.parametrize("command", ["emq_worker", "emq_pump"])
def test_worker_and_pump_wait_for_an_unreachable_server_saying_so_once(up_env, command):
    proc = manage({**up_env, "EMQ_URL": UNREACHABLE}, command, stderr=subprocess.PIPE, text=True)
    lines = []
    wait_for(lambda: lines.append(proc.stderr.readline()) or "Waiting for it" in lines[-1], timeout=20,
             what="the waiting line")
    assert f"cannot reach Valkey at {UNREACHABLE}" in lines[-1] and "Ctrl-C stops" in lines[-1]
    time.sleep(1.0)  # more tries happen meanwhile; none of them speaks
    proc.send_signal(signal.SIGTERM)
    _, rest = proc.communicate(timeout=20)
    assert proc.returncode == 0 and "Waiting for it" not in rest and "Traceback" not in rest, rest


@pytest.mark.parametrize("command", ["emq_worker", "emq_pump"])
def test_worker_and_pump_fail_fast_alike_with_no_wait(up_env, command):
    proc = manage({**up_env, "EMQ_URL": UNREACHABLE, "EMQ_STARTUP_WAIT": "0"}, command, stderr=subprocess.PIPE,
                  text=True)
    _, err = proc.communicate(timeout=20)
    assert proc.returncode == 1 and err.strip().splitlines() == [
        f"CommandError: cannot reach Valkey at {UNREACHABLE}: Error 111 connecting to 127.0.0.1:1. Connection refused. "
        "Start the server or set EMQ_URL to one that runs."]


def test_a_worker_started_before_its_server_runs_jobs_once_it_answers(up_env, tmp_path):
    port = free_port()
    url = f"redis://127.0.0.1:{port}/0"
    worker = manage({**up_env, "EMQ_URL": url}, "emq_worker", "--burst", stderr=subprocess.PIPE, text=True)
    wait_for(lambda: "Waiting for it" in worker.stderr.readline(), timeout=20, what="the waiting line")
    server = subprocess.Popen([embedded.binary(), "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                               "--appendonly", "no", "--dir", str(tmp_path)], stdout=subprocess.DEVNULL)
    try:
        _, err = worker.communicate(timeout=30)
        assert worker.returncode == 0 and "the server answers now; starting" in err, err
    finally:
        server.terminate()
        server.wait(10)


@pytest.mark.parametrize("args, says", [
    (["--queues", ",,"], "--queues ',,' names no queue"),
    (["--grace", "-5"], "--grace must be at least 0, not -5"),
    (["--batch", "0"], "--batch must be at least 1, not 0"),
    (["--concurrency", "0"], "--concurrency must be at least 1, not 0"),
    (["--metrics-port", "70000"], "--metrics-port must be a TCP port"),
])
def test_worker_options_are_checked(args, says):
    with pytest.raises(CommandError, match=says.replace("(", r"\(")):
        call_command("emq_worker", *args)


def test_pump_queues_are_checked():
    with pytest.raises(CommandError, match="names no queue"):
        call_command("emq_pump", "--queues", " , ")
