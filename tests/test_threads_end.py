"""Threads end, and one stuck queue stalls nothing else.

``run_until_empty()`` stops every thread it started; a Pump gives up its lead with one
compare-and-delete; lease renewal runs on a thread per queue, so a queue whose server does not
answer never delays the renewals of another.
"""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
import threading
from pathlib import Path

import pytest
import redis

from emq.core import embedded
from emq.core.engine import Queue
from emq.runtime.held import Held
from emq.runtime.leases import Leases
from emq.runtime.pump import Pump
from emq.testing import run_until_empty
from tests import jobs
from tests.procs import server_ms, wait_for


def test_run_until_empty_leaves_no_thread_behind(emq_env):
    """Five drains in a row (plain and async jobs) end with no more threads than before the first."""
    from tests import tasks  # an async def task: the worker's event loop thread starts too

    tasks.nap.enqueue(0.01, "warm")  # asgiref's one executor thread for sync_to_async lasts the process
    run_until_empty()
    before = threading.active_count()
    for i in range(5):
        jobs.add.enqueue_many([((i, n), {}) for n in range(20)])
        tasks.nap.enqueue(0.01, f"v{i}")
        run_until_empty(concurrency=4)
    leftover = [t.name for t in threading.enumerate()]
    assert threading.active_count() <= before, f"threads left behind: {leftover}"


def test_a_stopped_worker_closes_its_loops_own_connection(emq_env):
    """The loop's connection (``own_client``) is closed with the worker, not left to the garbage
    collector: that closes it in whatever thread collects it, where a time limit's exception can land
    mid-close and leave the socket open (a ResourceWarning that once failed CI)."""
    from emq.runtime.worker import Worker

    jobs.add.enqueue(1, 2)
    w = Worker(["default"], concurrency=2, pump=False, burst=True, park_timeout=0.5)
    assert w.run() == 0 and w.processed == 1
    if w.wire.client is None:
        pytest.skip("on a cluster the loop uses the shared client: it has no connection of its own")
    own = w.wire.client.connection_pool.get_connection()  # its one connection, as it is: no reconnect
    assert not own.is_connected


def test_a_pump_resigns_only_its_own_lead(emq_env):
    q = Queue("default")
    assert q.tick("pump-a", ttl_ms=10_000, park_ms=1000).leader
    assert not q.resign("pump-b") and q.client.get(q.keys.leader) == "pump-a"
    assert q.resign("pump-a") and q.client.get(q.keys.leader) is None
    pump = Pump([q]).start()
    wait_for(lambda: q.client.get(q.keys.leader) == pump.id, what="the Pump to lead")
    q.client.set(q.keys.leader, "a-successor")  # the lead moved on while this Pump was stopping
    pump.close()
    assert q.client.get(q.keys.leader) == "a-successor"


def test_a_queue_that_does_not_answer_never_delays_renewals_on_another(emq_env):
    """One server stopped (SIGSTOP) under queue "stuck": the 1 s leases of queue "live" stay renewed."""
    folder = Path(tempfile.mkdtemp(prefix="emq-test-stuck-"))
    stuck_client = redis.Redis.from_url(embedded.start(folder, persist=False), decode_responses=True)
    stuck = Queue("stuck", client=stuck_client)
    live = Queue("default")
    jobs.add.using(queue="default", lease=1).enqueue(1, 1)
    stuck.mint([jobs.add.using(lease=1).spec((2, 2), {}, "")])
    (live_job,), (stuck_job,) = live.bclaim(1, "w"), stuck.bclaim(1, "w")
    pid = int((folder / "valkey.pid").read_text())
    leases = Leases([live, stuck])
    os.kill(pid, signal.SIGSTOP)
    try:
        leases.start()
        leases.hold(Held(stuck, stuck_job))
        leases.hold(Held(live, live_job))
        end = server_ms(live.client) + 3000
        while (now := server_ms(live.client)) < end:  # 5 lease lengths: every one renewed in time
            assert live.client.zscore(live.keys.leases, live_job.id) > now, "the live lease expired"
            wait_for(lambda n=now: server_ms(live.client) >= n + 50, what="50 ms to pass")
        assert live.get_job(live_job.id).state == "active"
    finally:
        os.kill(pid, signal.SIGCONT)
        leases.close()
        embedded.stop(folder)
        shutil.rmtree(folder, ignore_errors=True)
