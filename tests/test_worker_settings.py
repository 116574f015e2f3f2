"""Live worker settings: concurrency, queues and a pause stored on the server reach running workers within
2 s (their heartbeat's wake), resize their slots safely, and outlive a restart until cleared."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import pytest
from django.core.management import call_command

from emq.core import overrides, registry
from emq.core.engine import Queue
from emq.runtime.slots import Slots
from emq.runtime.tuning import Tuning
from tests import tune_jobs
from tests.dashboard_fixtures import action_url, make_users, web_as
from tests.fleet import fleet_for
from tests.procs import wait_for

IMPORTS = {"EMQ_IMPORTS": "tests.jobs,tests.tune_jobs"}


@pytest.fixture
def fleet(emq_env, tmp_path):
    yield from fleet_for(emq_env, tmp_path)


def _running(folder: Path) -> int:
    return len(os.listdir(folder))


def _most_running(folder: Path, seconds: float) -> int:
    """The most jobs seen running at once over seconds."""
    most, end = 0, time.monotonic() + seconds
    while time.monotonic() < end:
        most = max(most, _running(folder))
        time.sleep(0.01)
    return most


def _hold(queue: str, folder: Path, n: int, seconds: float = 1.0) -> None:
    folder.mkdir(exist_ok=True)
    tune_jobs.hold.using(queue=queue).enqueue_many([((str(folder), seconds), {})] * n)


def _worker_id(emq_env) -> str:
    return wait_for(lambda: [w.id for w in registry.workers(emq_env["EMQ_PREFIX"])], 30, what="the worker's entry")[0]


@pytest.mark.slow
@pytest.mark.one_server
@pytest.mark.timing
def test_a_workers_concurrency_and_queues_set_from_the_dashboard_take_effect_within_two_seconds(
        emq_env, fleet, tmp_path, db):
    """A worker of concurrency 2 runs 2 jobs at once; set to 6 from the dashboard it runs 6 within 2 s; its
    queues set to another queue, it starts that queue's jobs within 2 s and no more of the first's."""
    first, second = tmp_path / "first", tmp_path / "second"
    _hold("tune", first, 200)
    fleet.worker("--queues", "tune", "--concurrency", "2", env=IMPORTS)
    wid = _worker_id(emq_env)
    wait_for(lambda: _running(first) == 2, 30, what="2 jobs running")
    assert _most_running(first, 1.0) == 2
    web = web_as(make_users()["operator"])
    web.post(action_url("worker_set"), {"worker": wid, "concurrency": "6"})
    asked = time.monotonic()
    wait_for(lambda: _running(first) == 6, 5, what="6 jobs running")
    assert time.monotonic() - asked <= 2.0
    assert _most_running(first, 1.5) == 6

    _hold("tune2", second, 60)
    web.post(action_url("worker_set"), {"worker": wid, "queues": "tune2"})
    asked = time.monotonic()
    wait_for(lambda: _running(second) >= 1, 5, what="a job of the new queue running")
    assert time.monotonic() - asked <= 2.0
    wait_for(lambda: _running(first) == 0, 5, what="the first queue's jobs to end")  # they finish, none starts
    assert _most_running(first, 1.5) == 0 and _running(second) == 6
    tune = Queue("tune").counts()
    assert tune.ready > 0 and tune.active == 0  # its last jobs finished into it; the rest wait for other workers
    entry = registry.workers(emq_env["EMQ_PREFIX"])[0].info
    assert (entry["concurrency"], entry["specs"], entry["settings"]) == (6, ["tune2"], [wid])


@pytest.mark.slow
@pytest.mark.one_server
def test_a_stored_setting_outlives_a_restart_until_cleared_and_a_pause_holds_claims(emq_env, fleet, tmp_path):
    """With 6 stored for every worker, a worker started with --concurrency 2 runs 6 and says so; paused, it
    starts nothing more; cleared, it is back to 2."""
    folder = tmp_path / "jobs"
    call_command("emq", "workers", "set", "--all", "--concurrency", "6")
    _hold("tune", folder, 300)
    proc = fleet.worker("--queues", "tune", "--concurrency", "2", env=IMPORTS)
    wait_for(lambda: _running(folder) == 6, 30, what="6 jobs running")
    wait_for(lambda: "concurrency 6 (stored for *; started with 2)" in fleet.log(proc), 5, what="the log line")

    call_command("emq", "workers", "pause", "--all")
    wait_for(lambda: _running(folder) == 0, 5, what="the running jobs to end, none to start")
    assert _most_running(folder, 1.5) == 0
    call_command("emq", "workers", "resume", "--all")
    wait_for(lambda: _running(folder) == 6, 5, what="claims again")

    call_command("emq", "workers", "clear", "--all")
    wait_for(lambda: _most_running(folder, 1.2) == 2, 10, what="back to 2 at once")
    assert overrides.stored(emq_env["EMQ_PREFIX"]) == {}
    os.kill(proc.pid, signal.SIGTERM)
    proc.wait(30)


def test_the_most_specific_stored_setting_wins():
    stored = {"*": {"concurrency": 4, "paused": True}, "web-1": {"queues": ["mail:5", "default"]},
              "web-1:42": {"concurrency": 8}, "web-2": {"concurrency": 1}}
    o = overrides.effective("web-1:42:abc123", stored)
    assert (o.concurrency, o.queues, o.paused) == (8, ("mail:5", "default"), True)
    assert o.sources == ("web-1:42", "web-1", "*")
    assert overrides.effective("web-10:1:x", stored).concurrency == 4  # "web-1" names no "web-10"


def test_bad_settings_are_refused_saying_what_to_give(emq_env):
    from emq.errors import ConfigurationError

    for bad in ("0", "many", "100000"):
        with pytest.raises(ConfigurationError, match="concurrency must be a whole number from 1 to 1000"):
            overrides.check_concurrency(bad)
    with pytest.raises(ConfigurationError, match="weight"):
        overrides.check_queues("mail:x")
    with pytest.raises(ConfigurationError, match="--worker ID .* or --all"):
        overrides.selector_of(None, False)


def test_a_posted_setting_wakes_the_loop_once_and_clearing_returns_to_the_start():
    signal_ = threading.Event()
    t = Tuning(2, ["a"], signal_)
    t.post(overrides.Override(concurrency=6, sources=("*",)))
    assert t.pending and signal_.is_set()
    change = t.take()
    assert (change.concurrency, change.queues, change.paused) == (6, None, None) and not t.pending
    signal_.clear()
    t.post(overrides.Override(concurrency=6, sources=("*",)))  # the same again: nothing to do
    assert not t.pending and not signal_.is_set()
    t.post(overrides.Override())
    assert t.take().concurrency == 2 and t.concurrency == 2


def test_slots_grow_at_once_and_shrink_as_threads_go_idle():
    """Resized from 2 to 6 the slots start 4 threads; back to 2, the idle threads end; and up again."""
    from emq.runtime.deadlines import Deadlines

    slots = Slots(2, lambda held, outcome: None, Deadlines(lambda *a: None, drain=lambda: None))
    slots.start()
    try:
        slots.resize(6)
        assert len(slots.threads) == 6
        slots.resize(2)
        wait_for(lambda: len(slots.threads) == 2 and not slots.retiring, 5, what="the idle threads to end")
        slots.resize(1)
        slots.resize(3)  # one told to end stays after all, one more starts
        wait_for(lambda: len(slots.threads) == 3 and not slots.retiring, 5, what="3 threads")
    finally:
        slots.close()
