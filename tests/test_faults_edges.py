"""Fault suite, the edges (issue #34, findings 6, 8, 9 and the lesser ones): hostile job data and
hostile requests meet the command line, the dashboard and the metrics endpoint; notes, waits,
passwords, queue names, due times and URLs that used to be taken as they came.

What must hold: a terminal shows job data, never obeys it; a name given to ``emq enqueue`` is
looked up, never imported; a request answers 4xx, never 500 nor a held line; a progress note is
bounded and masked; ``ref.wait()`` rides out a restart shorter than its timeout; a wrong
password or database is said at once; a bad queue name or due time is refused where it is given.
"""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime, timedelta

import pytest
from django.core.management import CommandError, call_command
from django.test import override_settings

import emq
from emq.core import connection, embedded
from emq.core.connection import get_client
from emq.core.engine import Queue
from emq.runtime import startup
from emq.runtime.worker import Worker
from emq.testing import run_until_empty
from tests import jobs, records
from tests.dashboard_fixtures import make_users, page_url, web_as
from tests.private_server import PrivateValkey
from tests.procs import manage, running, wait_for

CONTROL = re.compile(r"[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")  # all but the newline
EVIL = "\x1b]0;pwned\x07\x1b[2J\x1b[31m\u202e"  # retitle, clear, recolour, reverse the line


@emq.job(takes_context=True)
def reports(ctx, key, note, password=None, padding=0):
    """Report progress with a note ({password} replaced by it, padded with that many x), then hold
    until the test says so (its key)."""
    ctx.progress(0.5, note.replace("{password}", password or "") + "x" * padding)
    deadline = time.monotonic() + 30
    while get_client().get(key) != "go" and time.monotonic() < deadline:
        time.sleep(0.02)


def emq_cmd(*args: str) -> str:
    """``manage.py emq ARGS`` in-process: stdout; CommandError when it exits 1."""
    out, err = io.StringIO(), io.StringIO()
    call_command("emq", *args, stdout=out, stderr=err)
    return out.getvalue() + err.getvalue()


@pytest.fixture
def users(db):
    return make_users()


@pytest.fixture
def worker(emq_env):
    """A worker in a thread of this process for the whole test."""
    with running(Worker(["default"], concurrency=4, park_timeout=1.0)) as w:
        wait_for(lambda: w.heartbeat.thread.is_alive(), what="the worker to be up")
        yield w


# -- 6: the command line shows job data, never obeys it; enqueue imports nothing ----------------------


@pytest.mark.one_server
def test_the_command_line_escapes_control_characters_in_every_job_field(emq_env, client):
    """An escape sequence in a group, an id, an argument, an error and a progress note: every
    text output shows it escaped, and --json keeps the exact values."""
    dead = jobs.always_fails.using(max_attempts=1).enqueue(f"boom{EVIL}")
    run_until_empty(["default"])
    assert emq.get_job(dead.id).state == "dead"
    ready = jobs.add.using(group=f"g{EVIL}", job_id=f"id{EVIL}").enqueue(f"a{EVIL}", 1)
    records.spoil(client, Queue("default").keys.job(ready.id), {"progress": "0.5", "progress_note": f"n{EVIL}"})
    outputs = [emq_cmd("jobs", "default"), emq_cmd("jobs", "default", "--state", "dead"),
               emq_cmd("jobs", "default", "--group", f"g{EVIL}"), emq_cmd("show", ready.id),
               emq_cmd("show", dead.id), emq_cmd("status")]
    for out in outputs:
        assert not CONTROL.search(out), out
    assert "g\\x1b]0;pwned\\x07" in outputs[0] and "boom\\x1b]0;pwned" in outputs[1]
    assert "\\u202e" in outputs[3] and "n\\x1b]0;pwned" in outputs[3]
    shown = json.loads(emq_cmd("show", ready.id, "--json"))
    assert not CONTROL.search(emq_cmd("show", ready.id, "--json"))
    assert (shown["id"], shown["group"], shown["args"][0], shown["progress_note"]) == (
        f"id{EVIL}", f"g{EVIL}", f"a{EVIL}", f"n{EVIL}")
    with pytest.raises(CommandError) as refused:  # an error message that repeats what was typed
        emq_cmd("enqueue", f"tests.jobs.nope{EVIL}")
    assert not CONTROL.search(str(refused.value)) and "nope\\x1b]0;pwned" in str(refused.value)


@pytest.mark.one_server
def test_enqueue_looks_a_name_up_and_never_imports_the_module_it_names(emq_env, tmp_path, monkeypatch):
    """A module on the path that no app imports is not imported by ``emq enqueue module.attr``."""
    marker = tmp_path / "imported"
    (tmp_path / "edges_probe.py").write_text(f"open({str(marker)!r}, 'w').close()\nx = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(CommandError, match='no job registered as "edges_probe.x".*EMQ_IMPORTS'):
        emq_cmd("enqueue", "edges_probe.x")
    assert not marker.exists() and "edges_probe" not in sys.modules
    with pytest.raises(CommandError, match='no job registered as "os.system"'):
        emq_cmd("enqueue", "os.system", "--args", '["true"]')


@pytest.mark.one_server
def test_enqueue_with_arguments_that_do_not_fit_says_one_line(emq_env):
    """Issue #32's papercut 7: not a 20-line traceback."""
    proc = manage(emq_env, "emq", "enqueue", "tests.jobs.add", "--args", "[1]",
                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 1, (out, err)
    assert err.strip().count("\n") == 0 and "arguments do not fit job tests.jobs.add(a, b)" in err, err


# -- 8: hostile requests answer 4xx at once ----------------------------------------------------------


@pytest.mark.one_server
def test_metrics_with_a_non_ascii_bearer_token_is_401(emq_env, settings, users):
    settings.EMQ_METRICS_TOKEN = "right-token"
    web = web_as(None)
    assert web.get("/metrics", HTTP_AUTHORIZATION="Bearer t\u00e9st\u2603").status_code == 401
    assert web.get("/metrics", HTTP_AUTHORIZATION="Bearer right-token").status_code == 200


@pytest.mark.one_server
def test_the_live_feed_refuses_bad_cursors_and_unknown_queues_at_once(emq_env, settings, users):
    """since=abc or past any stream id: 400; a queue nobody used: 404 without waiting; a quiet
    queue: an empty answer after the block, not a read timeout (503)."""
    settings.EMQ_EVENTS = True
    jobs.add.enqueue(1, 1)
    web = web_as(users["viewer"])
    for since in ("abc", "99999999999999999999999", "1-99999999999999999999", "1-2-3", "\u0663"):
        r = web.get(page_url("feed", queue="default", since=since))
        assert r.status_code == 400 and "not a stream id" in r.json()["error"], since
    started = time.monotonic()
    assert web.get(page_url("feed", queue="nosuch", since="0-0")).status_code == 404
    assert time.monotonic() - started < 1.0
    since = web.get(page_url("feed", queue="default")).json()["since"]
    quiet = web.get(page_url("feed", queue="default", since=since))
    assert quiet.status_code == 200 and quiet.json()["events"] == []


@pytest.mark.one_server
def test_a_job_whose_arguments_nest_600_deep_renders_cut(emq_env, users, client):
    """Stored kwargs (and args) nested past what enqueue allows: the page, the API's job and
    ``emq show`` render, saying where they cut."""
    ref = jobs.add.enqueue(1, 1)
    deep_dict, deep_list = "x", "y"
    for _ in range(600):
        deep_dict, deep_list = {"a": deep_dict}, [deep_list]
    records.spoil(client, Queue("default").keys.job(ref.id), {"kwargs": json.dumps(deep_dict),
                                                              "args": json.dumps([deep_list, {"password": "hunter2"}])})
    r = web_as(users["viewer"]).get(page_url("job", queue="default", id=ref.id))
    html = r.content.decode()
    assert r.status_code == 200 and "nested deeper than 100 levels: cut here" in html
    assert "hunter2" not in html
    assert "cut here" in emq_cmd("show", ref.id) and "cut here" in emq_cmd("show", ref.id, "--json")
    api = web_as(users["viewer"]).get(f"/emq/api/jobs/{ref.id}")
    assert api.status_code == 200 and "cut here" in json.dumps(api.json()) and "hunter2" not in api.content.decode()
    deeper = "[" * 5000 + "]" * 5000  # past the JSON parser's own limit (on Python 3.11)
    records.spoil(client, Queue("default").keys.job(ref.id), {"kwargs": deeper})
    assert web_as(users["viewer"]).get(page_url("job", queue="default", id=ref.id)).status_code == 200
    got = emq.get_job(ref.id).kwargs  # its raw text where the parser gives up (Python 3.11), else parsed (3.13's)
    assert (got == deeper or isinstance(got, list)) and ref.id in emq_cmd("show", ref.id)


# -- 9: progress notes bounded and masked; a wait rides out a restart ---------------------------------


def test_a_progress_note_is_cut_to_1000_characters_and_masked(worker, client, users):
    """A 2,000,000-character note with password=…: stored cut and masked; a note that repeats a
    secret argument's value is shown scrubbed on the job page."""
    key = f"{emq_env_prefix()}-go"
    long = reports.enqueue(key, "login password=hunter2 then ", padding=2_000_000)
    echoed = reports.enqueue(key, "echoed: {password} done", "s3cr3t-value")
    for ref in (long, echoed):
        wait_for(lambda ref=ref: ref.get().progress == 0.5, timeout=10, what="the progress to be stored")
    stored = long.get().progress_note
    assert len(stored) <= 1100 and stored.endswith("… [cut: 2,000,028 characters]")
    assert "hunter2" not in stored and "password=••••••••" in stored
    html = web_as(users["viewer"]).get(page_url("job", queue="default", id=echoed.id)).content.decode()
    assert "echoed: ••••••••" in html and "s3cr3t-value" not in html
    client.set(key, "go")
    assert long.wait(timeout=10).state == "completed" and echoed.wait(timeout=10).state == "completed"


def emq_env_prefix() -> str:
    from django.conf import settings

    return settings.EMQ_PREFIX


@pytest.fixture
def private(tmp_path):
    """A private Valkey with its AOF, and the settings pointing at it under a fresh prefix."""
    server = PrivateValkey(tmp_path).start()
    with override_settings(EMQ_URL=server.url, EMQ_PREFIX="edges-wait", EMQ_CLUSTER=False):
        yield server
    server.stop()


def test_wait_rides_out_a_server_restart_shorter_than_its_timeout(private):
    """A 3 s restart under a waiter with 30 s left: the waiter returns the job once it runs."""
    ref = jobs.add.enqueue(2, 3)
    got: list = []
    waiter = threading.Thread(target=lambda: got.append(ref.wait(timeout=30)), daemon=True)
    waiter.start()
    with private.client() as probe:
        wait_for(lambda: probe.info("clients")["blocked_clients"] >= 1, what="the waiter to block")
    private.kill()
    time.sleep(3)  # the outage itself
    private.start()
    run_until_empty(["default"])
    waiter.join(timeout=30)
    assert got and got[0].state == "completed" and got[0].result == 5


# -- the lesser findings: passwords, databases, URLs, queue names, due times --------------------------


@pytest.fixture
def guarded(tmp_path):
    """A Valkey that requires the password s3cret-pw."""
    server = PrivateValkey(tmp_path)
    server.proc = subprocess.Popen([embedded.binary(), "--port", str(server.port), "--bind", "127.0.0.1",
                                    "--save", "", "--requirepass", "s3cret-pw", "--dir", str(tmp_path)],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_for(lambda: _pings(server.port), timeout=15, what="the guarded Valkey")
    yield server
    server.stop()


def _pings(port: int) -> bool:
    import redis

    try:
        with redis.Redis(port=port, password="s3cret-pw") as probe:  # closed: no socket left to the GC
            return probe.ping()
    except redis.RedisError:
        return False


@pytest.mark.parametrize("auth", [":wrong-pw@", ""])
def test_a_wrong_or_missing_password_is_said_at_once_never_waited_on(guarded, auth):
    url = f"redis://{auth}127.0.0.1:{guarded.port}/0"
    with override_settings(EMQ_URL=url, EMQ_PREFIX="edges-auth", EMQ_STARTUP_WAIT=20, EMQ_CLUSTER=False):
        with pytest.raises(emq.ConfigurationError) as refused:
            jobs.add.enqueue(1, 1)
        said = str(refused.value)
        assert "authentication failed" in said and f"127.0.0.1:{guarded.port}" in said
        assert "wrong-pw" not in said and "Start the server" not in said
        started = time.monotonic()
        with pytest.raises(emq.ConfigurationError, match="authentication failed"):
            startup.wait_for_server(threading.Event())
        assert time.monotonic() - started < 3


@pytest.mark.one_server
def test_valkey_urls_are_accepted_and_a_missing_database_is_one_clear_error(emq_env, server_url):
    assert connection.client_url("valkeys://u:p@host:6380/2") == "rediss://u:p@host:6380/2"
    with pytest.raises(emq.ConfigurationError, match="valkey://"):
        connection.client_url("http://127.0.0.1:6379/0")
    with override_settings(EMQ_URL=server_url.replace("redis://", "valkey://", 1)):
        assert jobs.add.enqueue(1, 2).get().state == "ready"
    with override_settings(EMQ_URL=server_url.rsplit("/", 1)[0] + "/99"):
        with pytest.raises(emq.ConfigurationError, match="no database of that number"):
            jobs.add.enqueue(1, 2)
        with pytest.raises(CommandError, match="no database of that number"):
            emq_cmd("status")


@pytest.mark.one_server
def test_a_queue_name_a_worker_could_not_serve_is_refused_where_it_is_given(emq_env, users):
    for bad in ("a:b", "a,b", "a b", "{a}", "a#b", "", "x" * 201):
        with pytest.raises(emq.ConfigurationError, match="letters .of any script., digits"):
            jobs.add.using(queue=bad).enqueue(1, 1)
    with pytest.raises(emq.ConfigurationError, match="cannot be used"):
        emq.queue("a:b").get_job("x")
    assert web_as(users["viewer"]).get(page_url("scheduled", queue="a:b")).status_code == 400
    with pytest.raises(CommandError, match="cannot be used"):
        call_command("emq_worker", "--queues", "ok,a b", "--burst")
    for good in ("mail", "tenant-7.eu_west", "clicks#0"):
        assert jobs.add.using(queue=good).enqueue(1, 1).queue == good


@pytest.mark.one_server
def test_a_due_time_more_than_1000_years_ahead_is_refused(emq_env, settings):
    with pytest.raises(ValueError, match="more than 1,000 years ahead"):
        jobs.add.enqueue_at(datetime(9999, 12, 31, tzinfo=UTC), 1, 1)
    assert jobs.add.enqueue_at(datetime.now(UTC) + timedelta(days=365 * 100), 1, 1).get().state == "scheduled"
    from tests import tasks

    with pytest.raises(ValueError, match="more than 1,000 years ahead"):
        tasks.add.using(run_after=datetime(9999, 1, 1, tzinfo=UTC)).enqueue(1, 1)
