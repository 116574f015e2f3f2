"""Fault suite, the server: full (maxmemory, noeviction) under two workers, and kill -9 + restart
with its AOF under 60 running jobs. Real worker processes against a Valkey of the test's own.

What must hold: no worker dies, nothing acknowledged is lost, no job runs twice, each loop logs a
server state once (not once a retry), and every job ends in exactly one place.
"""

from __future__ import annotations

import os
import threading
import time
import uuid
from collections import Counter

import pytest

import emq
from emq.core import stored
from emq.core.engine import Queue
from emq.core.records import Outcome
from emq.runtime.worker import Worker
from emq.testing import check_invariants
from tests import jobs, records
from tests.private_server import PrivateValkey
from tests.procs import manage, wait_for

pytestmark = pytest.mark.slow
OUTAGE = float(os.environ.get("EMQ_FAULT_OUTAGE", "10"))  # seconds the server stays down (the issue: 30)


@pytest.fixture
def private(tmp_path, settings):
    """A private Valkey and a fresh prefix on it, for this process and the workers it starts."""
    server = PrivateValkey(tmp_path).start()
    settings.EMQ_URL, settings.EMQ_PREFIX, settings.EMQ_CLUSTER = server.url, f"fault-{uuid.uuid4().hex[:8]}", False
    env = {"EMQ_URL": server.url, "EMQ_PREFIX": settings.EMQ_PREFIX, "EMQ_CLUSTER": "false"}
    yield server, env
    server.stop()


class Producer(threading.Thread):
    """Enqueue jobs.add as fast as one thread can; record what was acknowledged and what was refused."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.acked: list[str] = []
        self.refused: Counter[str] = Counter()
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.is_set():
            try:
                self.acked.append(jobs.add.enqueue(1, 1).id)
            except emq.ServerUnavailable as exc:  # ServerFull is one
                self.refused[type(exc).__name__] += 1
                time.sleep(0.01)


def _states(q, ids: list[str]) -> Counter:
    return Counter(state for state, in stored.read_raw(q.client, [q.keys.job(i) for i in ids], ("state",)))


def _sweep(q) -> tuple[bool, list[str]] | None:
    """Sweep as a Pump would the moment the server answers again: (True, reclaimed ids), or None."""
    try:
        return True, q.sweep()
    except emq.ServerUnavailable:
        return None


def _logged(path, words: str) -> int:
    return sum(words in line for line in path.read_text().splitlines())


def test_a_full_server_refuses_enqueues_clearly_and_no_worker_dies(private, tmp_path):
    """maxmemory reached for 5 s under 2 workers and a producer: enqueue raises ServerFull, both workers
    live on, each logs the state once a loop, and after the limit is raised every acknowledged job completes."""
    server, env = private
    logs = [tmp_path / f"worker{i}.log" for i in range(2)]
    files = [open(p, "w") for p in logs]  # noqa: SIM115 (closed in finally)
    workers = [manage(env, "emq_worker", "--concurrency", "4", stderr=f) for f in files]
    producer = Producer()
    client = server.client()
    try:
        wait_for(lambda: client.scard(f"{env['EMQ_PREFIX']}:workers") == 2, timeout=30, what="both workers up")
        producer.start()
        wait_for(lambda: len(producer.acked) > 200, timeout=20, what="the producer to run")
        used = int(client.info("memory")["used_memory"])
        client.config_set("maxmemory-policy", "noeviction")
        client.config_set("maxmemory", used)
        full_at = time.monotonic()
        wait_for(lambda: producer.refused["ServerFull"] > 0, timeout=5, what="an enqueue refused as ServerFull")
        time.sleep(max(0.0, 5.0 - (time.monotonic() - full_at)))  # the scenario: full for 5 s
        client.config_set("maxmemory", 0)
        before = len(producer.acked)  # the producer resumes by itself once memory is raised
        wait_for(lambda: len(producer.acked) > before, timeout=10, what="an enqueue acknowledged after the limit")
        producer.done.set()
        producer.join(timeout=10)
        q = Queue("default")
        wait_for(lambda: _states(q, producer.acked) == Counter({"completed": len(producer.acked)}), timeout=30,
                 every=0.2, what="every acknowledged job to complete")
        states = _states(q, producer.acked)
        print(f"\nfull server: acknowledged={len(producer.acked)} refused={dict(producer.refused)} "
              f"states={dict(states)} worker pids={[w.pid for w in workers]} "
              f"alive={[w.poll() is None for w in workers]} "
              f"'server full' lines per worker={[_logged(p, 'server full') for p in logs]}")
        assert states == Counter({"completed": len(producer.acked)}), "an acknowledged job was lost or stuck"
        assert set(producer.refused) == {"ServerFull"}
        assert all(w.poll() is None for w in workers), "a worker died"
        assert all(_logged(p, "server full") <= 8 for p in logs), "a state logged once a retry"
        check_invariants(q)
    finally:
        producer.done.set()
        client.config_set("maxmemory", 0)
        for w in workers:
            w.terminate()
        for w in workers:
            w.wait(timeout=20)
        for f in files:
            f.close()


@pytest.mark.parametrize("loaded", [True, False], ids=["functions loaded", "functions not loaded"])
def test_a_server_already_full_drains_by_itself(private, tmp_path, loaded):
    """A server at maxmemory (noeviction) with 400 ready jobs, and no operator: a worker started then
    claims and finishes every one (claim and finish run with allow-oom: as functions, or as scripts
    when the full server refuses to load their library), while an enqueue is still refused as
    ServerFull. Before, claims were refused as writes and nothing moved until a purge."""
    server, env = private
    client = server.client()
    q = Queue("default")
    if loaded:  # the claim's and the finish's libraries on the server before it fills up
        Queue("default").bclaim(1, "w")
        Queue("default").finish([Outcome("none", 1, "completed", "null")])
    refs = jobs.noop.enqueue_many([((i, "x" * 2000), {}) for i in range(400)])
    client.config_set("maxmemory-policy", "noeviction")
    client.config_set("maxmemory", int(client.info("memory")["used_memory"]))
    with pytest.raises(emq.ServerFull):
        jobs.add.enqueue(1, 1)
    log = tmp_path / "worker.log"
    with open(log, "w") as err:
        worker = manage(env, "emq_worker", "--concurrency", "8", stderr=err)
        try:
            wait_for(lambda: _states(q, [r.id for r in refs]) == Counter({"completed": 400}), timeout=60, every=0.2,
                     what="the full server's jobs to complete without an operator")
            with pytest.raises(emq.ServerFull):
                jobs.add.enqueue(1, 1)
            memory = client.info("memory")
            print(f"\nfull server drained: 400 completed, used_memory={memory['used_memory']} "
                  f"maxmemory={memory['maxmemory']} worker alive={worker.poll() is None}")
            assert worker.poll() is None
            check_invariants(q)
        finally:
            client.config_set("maxmemory", 0)
            worker.terminate()
            worker.wait(timeout=20)


def test_a_full_server_renews_the_leases_it_holds(private):
    """At maxmemory the renewal (and the progress riding with it) still lands: running jobs keep their
    leases instead of running out while memory is freed, and their finish lands too."""
    server, _ = private
    client = server.client()
    q = Queue("default")
    jobs.noop.enqueue_many([((i,), {}) for i in range(2)])
    claimed = q.bclaim(2, "w")
    client.config_set("maxmemory-policy", "noeviction")
    client.config_set("maxmemory", int(client.info("memory")["used_memory"]))
    try:
        with pytest.raises(emq.ServerFull):
            jobs.noop.enqueue(1)
        items = [(c.id, c.token) for c in claimed]
        assert q.live.renew(items, 60_000, [(c.id, c.token, 0.5, "half") for c in claimed]) == ["ok", "ok"]
        assert q.finish([Outcome(c.id, c.token, "completed", "null") for c in claimed]) == ["completed"] * 2
    finally:
        client.config_set("maxmemory", 0)


def test_a_server_restart_is_not_a_reclaim(private, tmp_path):
    """kill -9 of the server (AOF) with 60 running jobs, down for OUTAGE s (past their 5 s leases):
    the jobs that ended meanwhile are settled by their buffered outcomes, the ones still running are
    renewed, none is reclaimed and run again, none is lost."""
    server, env = private
    notes = tmp_path / "runs.txt"
    log = tmp_path / "worker.log"
    out = open(log, "w")  # noqa: SIM115 (closed in finally)
    worker = manage(env, "emq_worker", "--concurrency", "60", stderr=out)
    try:
        refs = [jobs.ran_through.enqueue(str(notes), f"short-{i}", 1.0) for i in range(30)]
        refs += [jobs.ran_through.enqueue(str(notes), f"long-{i}", OUTAGE + 4) for i in range(30)]
        q = Queue("default")
        wait_for(lambda: notes.exists() and len(notes.read_text().splitlines()) == 60, timeout=20,
                 what="all 60 jobs to start")
        server.kill()
        time.sleep(OUTAGE)  # the scenario itself: the server stays down this long
        server.start()
        swept = wait_for(lambda: _sweep(q), timeout=10, what="a sweep right after the restart")  # an eager Pump
        wait_for(lambda: all(records.field(q.client, q.keys.job(r.id), "state") in ("completed", "dead") for r in refs),
                 timeout=OUTAGE + 30, what="every job to settle")
        runs = Counter(line.split()[0] for line in notes.read_text().splitlines())
        states = Counter(records.field(q.client, q.keys.job(r.id), "state") for r in refs)
        twice = sum(n > 1 for n in runs.values())
        print(f"\nrestart after {OUTAGE:g} s: states={dict(states)} ran twice={twice} worker pid={worker.pid} "
              f"swept at once={len(swept[1])} "
              f"alive={worker.poll() is None} reclaimed={q.client.hget(q.keys.stats, 'reclaimed') or 0} "
              f"'server unreachable' lines={_logged(log, 'server unreachable')}")
        assert states == Counter({"completed": 60}), "a job was lost"
        assert twice == 0, f"{twice} jobs ran twice"
        assert worker.poll() is None
        check_invariants(q)
    finally:
        worker.terminate()
        worker.wait(timeout=30)
        out.close()


def test_a_worker_that_finds_the_server_gone_as_it_starts_waits_for_it(private, caplog):
    """The server answered when the process checked, and is gone when the worker registers (a failover
    at that moment): the worker says so and waits, and runs the queue's job once the server is back.
    Before, the registration's error ended the worker (its supervisor restarted it, traceback and all)."""
    server, _ = private
    ref = jobs.add.enqueue(1, 2)
    w = Worker(["default"], concurrency=1, pump=False, park_timeout=0.5)
    server.kill()
    t = threading.Thread(target=w.run, daemon=True)
    caplog.set_level("WARNING", logger="emq.worker")
    t.start()
    try:
        wait_for(lambda: "retrying with backoff" in caplog.text, timeout=10, what="the worker to say so")
        assert t.is_alive()
        server.start()
        wait_for(lambda: ref.get().state == "completed", timeout=20, what="the job done once the server is back")
    finally:
        w.stop()
        t.join(timeout=10)
    assert not t.is_alive() and "server back after" in caplog.text
