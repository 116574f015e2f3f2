"""An upgrade loses nothing and runs nothing twice: a worker of this tree finishes the jobs the previous
release left (issue #29; DESIGN rule 11: a worker of release N runs the jobs of release N-1).

The previous release (tag ``v0.2.0``, else its commit: a fresh clone may carry no tags) is built into a
wheel as ``make dist`` builds it and installed, without dependencies, into a virtualenv of its own, which
borrows Django, redis and the rest from this run's through a ``.pth`` (offline, a few seconds, cached
per commit in the temp folder). Its real processes, on a private Valkey, leave a job of every kind as a deploy finds
them: ready, scheduled, waiting on parents (``after=``, a chain, a batch), a recurrence's occurrences,
unique, rate-limited, prioritized, one mid-lease on a worker killed with SIGKILL, one dead and one
retried once. Then this tree's worker and Pump (real processes) finish every one. The two releases'
Valkey Function libraries live side by side (an old worker still runs beside this tree's) until
``manage.py emq functions --prune`` deletes the old ones, and this tree's worker runs on.

Behaviour only: each job body writes each run down (``tests/upgrade_app/upgrade_jobs.py``) and the test
counts those rows per kind, reads states through ``emq.get_job`` and the CLI, and never reads how a job
is stored, so the test holds whatever the record's format becomes.
"""

from __future__ import annotations

import collections
import hashlib
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import sysconfig
import tarfile
import tempfile
import time
from pathlib import Path

import pytest
from django.core.management import call_command

import emq
from emq.core.connection import get_client
from tests.private_server import PrivateValkey
from tests.procs import ROOT, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

TAG, COMMIT = "v0.2.0", "b84f0f6"  # the previous release and its commit (a clone without tags): moved at each release
APP = Path(__file__).resolve().parent / "upgrade_app"  # the jobs, settings and steps both releases run
RUNS = "upgrade:runs"  # upgrade_jobs.RUNS: one JSON row a run
QUEUES = ["upg-main", "upg-prio", "upg-rate", "upg-fail", "upg-lease", "upg-repeat"]
QUEUE_OF = {"prio": "upg-prio", "rate": "upg-rate", "dead": "upg-fail", "retried": "upg-fail", "lease": "upg-lease",
            "recurring": "upg-repeat", "late": "upg-late"}  # any other kind: upg-main
# What the old side leaves each kind in (read by this tree's emq.get_job before its worker starts).
LEFT = {"ready": "ready", "scheduled": "scheduled", "after-parent": "ready", "after-child": "waiting",
        "chain": "waiting", "batch": "ready", "batch-callback": "waiting", "unique": "ready", "rate": "ready",
        "prio": "ready", "dead": "dead", "retried": "scheduled", "lease": "active", "recurring": "ready",
        "late": "ready"}  # late: for an old worker that runs on beside this tree's (a rolling deploy)
PRIORITIES = [0, 5, -3, 10, 1, 5]  # upgrade_steps.PRIORITIES: minted in this order
CHAIN = 3  # steps of the chain (minted lists the last one's id)


def test_this_trees_worker_and_pump_finish_every_job_the_previous_release_left(tmp_path, settings):
    """Every kind of job v0.2.0 minted ends as it should under this tree: each completes exactly once, in
    its order and under its rate limit; the dead one stays dead until retried; old and new function
    libraries live side by side (an old worker still runs) until ``emq functions --prune`` removes the old."""
    valkey = PrivateValkey(tmp_path).start()
    settings.EMQ_URL, settings.EMQ_PREFIX, settings.EMQ_CLUSTER = valkey.url, "emq", False  # this test's reads
    old = Side("old", old_python(previous_release()), [APP], tmp_path, valkey.url)
    new = Side("new", Path(sys.executable), [ROOT, APP], tmp_path, valkey.url)
    started = time.monotonic()
    try:
        minted, old_libraries = _old_side_leaves_work(old)
        _new_side_finishes_it(old, new, minted, old_libraries)
    except BaseException:
        print(old.tails() + new.tails())
        raise
    finally:
        old.stop_all()
        new.stop_all()
        valkey.stop()
    print(f"upgrade from {TAG}: {time.monotonic() - started:.1f} s")


# -- the old side ------------------------------------------------------------------------------


def _old_side_leaves_work(old: Side) -> tuple[dict, set[str]]:
    """Mint every kind, fail two, hang one and kill its worker, let the old Pump mint occurrences; stop."""
    worker = old.start("-m", "django", "emq_worker", "--queues", "upg-fail,upg-lease", "--no-pump",
                       "--concurrency", "3")
    minted = old.json("-m", "upgrade_steps", "mint")  # migrates first: the Pump below reads the rows
    assert minted.pop("unique-again") == {"created": False, "id": minted["unique"][0]}
    pump = old.start("-m", "django", "emq_pump", "--queues", "upg-repeat")
    wait_for(lambda: _started(minted["lease"][0]) and _state("dead", minted) == "dead"
             and _state("retried", minted) == "scheduled", timeout=60, every=0.1, what="the old worker's three jobs")
    wait_for(lambda: emq.queue("upg-repeat").counts().ready >= 2, timeout=60, every=0.1,
             what="two occurrences minted")
    pump.send_signal(signal.SIGTERM)
    assert pump.wait(timeout=30) == 0
    worker.kill()  # SIGKILL, its lease job still running
    worker.wait(timeout=10)
    minted["recurring"] = [row["id"] for row in _cli("jobs", "upg-repeat", "--state", "ready", "--limit", "100")]
    left = {kind: sorted({_state(kind, minted, i) for i in range(len(ids))}) for kind, ids in minted.items()}
    print("left by", TAG, json.dumps(left, sort_keys=True))
    assert left == {kind: [state] for kind, state in LEFT.items()}
    old_libraries = _libraries()
    assert old_libraries, "the old worker's claim and finish run as Valkey Functions"
    return minted, old_libraries


def _started(job_id: str) -> bool:
    return any(r["id"] == job_id and r["outcome"] == "started" for r in _runs())


# -- the new side ------------------------------------------------------------------------------


def _new_side_finishes_it(old: Side, new: Side, minted: dict, old_libraries: set[str]) -> None:
    """This tree's worker and Pump end every job; then the prune, the dead job retried, a job after the prune."""
    assert new.json("-m", "upgrade_steps", "unique") == {"created": False, "id": minted["unique"][0]}
    pump = new.start("-m", "django", "emq_pump", "--queues", ",".join(QUEUES))
    worker = new.start("-m", "django", "emq_worker", "--queues", ",".join(QUEUES), "--no-pump", "--concurrency", "1")
    wanted = {kind: len(ids) for kind, ids in minted.items() if kind not in ("dead", "late")} | {"chain": CHAIN}
    wait_for(lambda: _all_done(minted, wanted), timeout=90, every=0.1, what=f"every job done: {wanted}")
    assert _state("dead", minted) == "dead"  # a dead job stays dead through the upgrade
    both = _old_worker_runs_beside(old, minted, old_libraries)
    pruned = new.json("-m", "django", "emq", "functions", "--prune", "--json")["libraries"]
    this = {row["library"] for row in pruned if row["version"] == "this"}
    assert this and _libraries() == this  # this tree's stay: its worker runs on
    assert {row["library"] for row in pruned if row["deleted"]} == both - this
    after = new.json("-m", "upgrade_steps", "after", minted["dead"][0])  # the dead one retried, one more minted
    wait_for(lambda: _done_ids("dead") == set(minted["dead"]) and _done_ids("after-prune") == {after["id"]},
             timeout=30, every=0.1, what="the retried dead job and a job minted after the prune, done by that worker")
    for proc in (worker, pump):
        proc.send_signal(signal.SIGTERM)
    assert worker.wait(timeout=30) == 0 and pump.wait(timeout=30) == 0
    _report(minted, old_libraries, both, this)
    _assert_each_ran_once(minted)


def _old_worker_runs_beside(old: Side, minted: dict, old_libraries: set[str]) -> set[str]:
    """With this tree's libraries loaded, an old worker still claims and finishes (its own libraries, kept)."""
    burst = old.start("-m", "django", "emq_worker", "--queues", "upg-late", "--no-pump", "--burst")
    assert burst.wait(timeout=60) == 0
    assert _done_ids("late") == set(minted["late"])
    both = _libraries()
    assert old_libraries <= both, "the old release's libraries are kept beside this tree's until pruned"
    return both


def _all_done(minted: dict, wanted: dict) -> bool:
    done = collections.Counter(r["kind"] for r in _runs() if r["outcome"] == "done")
    occurrences = _done_ids("recurring")
    return (all(done[kind] >= n for kind, n in wanted.items() if kind != "recurring")
            and occurrences >= set(minted["recurring"]) and len(occurrences) > len(minted["recurring"]))


def _assert_each_ran_once(minted: dict) -> None:
    runs = _runs()
    done = [r for r in runs if r["outcome"] == "done"]
    twice = [i for i, n in collections.Counter(r["id"] for r in done).items() if n > 1]
    assert not twice, f"run to completion more than once: {twice}"
    assert {r["kind"] for r in done if r["side"] == "old"} == {"late"}  # the old side only left work, but late
    for kind, ids in minted.items():
        if kind != "chain":
            assert set(ids) <= _done_ids(kind), kind
            assert {_state(kind, minted, i) for i in range(len(ids))} == {"completed"}, kind
    by_kind = {kind: [r["n"] for r in done if r["kind"] == kind] for kind in ("chain", "prio", "batch-callback")}
    assert by_kind["chain"] == [1, 2, 100]  # each step given the previous result (the last .si(): its own)
    assert emq.get_job(minted["chain"][0], queue="upg-main").state == "completed"
    assert by_kind["prio"] == sorted(range(len(PRIORITIES)), key=lambda i: -PRIORITIES[i])
    assert by_kind["batch-callback"] == [2]  # its summary: both members completed
    child, parent = (next(r["at"] for r in done if r["kind"] == k) for k in ("after-child", "after-parent"))
    assert child >= parent
    rate = sorted(r["at"] for r in done if r["kind"] == "rate")
    assert rate[-1] - rate[0] >= 1.0, f"6 jobs limited to 2 a second ran within {rate[-1] - rate[0]:.2f} s"
    failed = collections.Counter((r["kind"], r["side"]) for r in runs if r["outcome"] == "failed")
    assert failed == {("dead", "old"): 1, ("retried", "old"): 1}
    assert [(r["side"], r["outcome"]) for r in runs if r["kind"] == "lease"] == [
        ("old", "started"), ("new", "started"), ("new", "done")]  # reclaimed from the killed worker, run once more


def _report(minted: dict, old_libraries: set[str], both: set[str], this: set[str]) -> None:
    """Print what each kind did on each side (the issue's acceptance quotes it)."""
    counts = collections.Counter((r["kind"], r["side"], r["outcome"]) for r in _runs())
    print(f"{'kind':<16}{'minted (old)':>13}{'old: failed/started/done':>26}{'new: done':>11}")
    for kind in [*LEFT, "after-prune"]:
        old = "/".join(str(counts[kind, "old", outcome]) for outcome in ("failed", "started", "done"))
        made = CHAIN if kind == "chain" else len(minted.get(kind, []))
        print(f"{kind:<16}{made:>13}{old:>26}{counts[kind, 'new', 'done']:>11}")
    print(f"function libraries: the old worker's {len(old_libraries)}, this tree's {len(this)}, both before the "
          f"prune {len(both)}, pruned {len(both - this)}")


# -- reading what happened -----------------------------------------------------------------


def _runs() -> list[dict]:
    return [json.loads(row) for row in get_client().lrange(RUNS, 0, -1)]


def _done_ids(kind: str) -> set[str]:
    return {r["id"] for r in _runs() if r["kind"] == kind and r["outcome"] == "done"}


def _state(kind: str, minted: dict, i: int = 0) -> str:
    return emq.get_job(minted[kind][i], queue=QUEUE_OF.get(kind, "upg-main")).state


def _libraries() -> set[str]:
    """emq's Valkey Function libraries on the server (FUNCTION LIST LIBRARYNAME emq_*)."""
    reply = get_client().execute_command("FUNCTION", "LIST", "LIBRARYNAME", "emq_*")
    libs = [lib if isinstance(lib, dict) else dict(zip(lib[::2], lib[1::2], strict=True)) for lib in reply]
    return {lib["library_name"] for lib in libs}  # (RESP2 answers flat lists, RESP3 maps)


def _cli(*args: str) -> object:
    """``manage.py emq <args> --json`` of this tree, in this process."""
    out = io.StringIO()
    call_command("emq", *args, "--json", stdout=out)
    return json.loads(out.getvalue())


# -- the two releases' processes -----------------------------------------------------------


class Side:
    """One release's processes: its Python, what is on their path, their environment and their logs."""

    def __init__(self, name: str, python: Path, path: list[Path], folder: Path, url: str) -> None:
        hidden = ("EMQ_", "DJANGO_", "DATABASE_", "PYTHON", "VIRTUAL_ENV")  # nothing of this run leaks in
        self.env = {k: v for k, v in os.environ.items() if not k.startswith(hidden)} | {
            "DJANGO_SETTINGS_MODULE": "upgrade_settings", "PYTHONPATH": os.pathsep.join(map(str, path)),
            "PYTHONUNBUFFERED": "1", "EMQ_URL": url, "UPGRADE_DB": str(folder / "rows.sqlite3"), "UPGRADE_SIDE": name}
        self.name, self.python, self.folder = name, python, folder
        self.procs: list[subprocess.Popen] = []
        self.logs: list[Path] = []

    def start(self, *args: str) -> subprocess.Popen:
        """Start ``python <args>`` in the test's folder (not the repository: old code must not see this tree's)."""
        what = args[2] if args[1] == "django" else args[1]
        log = self.folder / f"{self.name}-{len(self.logs)}-{what}.log"
        self.logs.append(log)
        with log.open("wb") as out:
            proc = subprocess.Popen([str(self.python), *args], cwd=self.folder, env=self.env, stdout=out,
                                    stderr=subprocess.STDOUT)
        self.procs.append(proc)
        return proc

    def json(self, *args: str) -> dict:
        """Run ``python <args>`` to its end; the JSON of its last line."""
        proc = self.start(*args)
        assert proc.wait(timeout=120) == 0, f"{self.name}: {' '.join(args)} failed:\n{self.logs[-1].read_text()}"
        return json.loads(self.logs[-1].read_text().strip().splitlines()[-1])

    def stop_all(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=10)

    def tails(self) -> str:
        return "".join(f"\n--- {log.name}\n" + "\n".join(log.read_text().splitlines()[-30:]) for log in self.logs)


def previous_release() -> str:
    """The commit of the previous release: its tag, else its commit (a fresh clone may carry no tags)."""
    for ref in (TAG, COMMIT):
        found = subprocess.run(["git", "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"], cwd=ROOT,
                               capture_output=True, text=True)
        if found.returncode == 0:
            return found.stdout.strip()
    pytest.fail(f"neither the tag {TAG} nor the commit {COMMIT} is in this clone: git fetch --tags (or --unshallow)")


def old_python(commit: str) -> Path:
    """The Python of a virtualenv holding commit's wheel and no other emq; built once per commit and Python.

    The wheel is built as ``make dist`` builds it (``--no-isolation``, the hatchling pinned in this run's
    virtualenv) from ``git archive``; it is installed without dependencies (offline), and a ``.pth``
    appends this run's site-packages for Django, redis and the rest.
    """
    purelib = os.path.realpath(sysconfig.get_paths()["purelib"])  # worktrees sharing a virtualenv share it
    key = hashlib.sha1(f"{commit}|{sys.version}|{purelib}".encode()).hexdigest()[:12]
    home = Path(tempfile.gettempdir()) / "emq-upgrade" / f"{commit[:12]}-{key}"
    if not (home / "venv" / "bin" / "python").exists():
        home.parent.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix="building-", dir=home.parent))
        _build_venv(commit, work, purelib)
        try:
            work.rename(home)  # atomic: a run that built it meanwhile keeps its own
        except OSError:
            shutil.rmtree(work)
    return home / "venv" / "bin" / "python"


def _build_venv(commit: str, work: Path, purelib: str) -> None:
    def run(*args: str) -> None:
        done = subprocess.run(args, cwd=work, capture_output=True, text=True, timeout=180)
        assert done.returncode == 0, f"{' '.join(args)}:\n{done.stdout}\n{done.stderr}"

    tar = subprocess.run(["git", "archive", commit, "emq", "pyproject.toml", "README.md", "LICENSE"], cwd=ROOT,
                         capture_output=True, check=True, timeout=60).stdout
    with tarfile.open(fileobj=io.BytesIO(tar)) as archive:
        archive.extractall(work / "src", filter="data")
    run(sys.executable, "-m", "build", "--no-isolation", "--wheel", "--outdir", str(work / "dist"), str(work / "src"))
    (wheel,) = (work / "dist").glob("django_emq-*.whl")
    run(sys.executable, "-m", "venv", "--without-pip", str(work / "venv"))
    venv_python = work / "venv" / "bin" / "python"
    run(sys.executable, "-m", "pip", "--python", str(venv_python), "install", "--quiet", "--no-deps", "--no-index",
        str(wheel))
    site = subprocess.run([str(venv_python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    (Path(site) / "upgrade-deps.pth").write_text(f"import site; site.addsitedir({purelib!r})\n")
