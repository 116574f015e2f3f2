"""``emq_worker --processes N``: real worker processes under one supervisor."""

from __future__ import annotations

import os
import signal
import subprocess

import emq
from emq.core.keys import registry_workers
from tests import jobs
from tests.procs import manage, wait_for


def _worker_pids(client, prefix) -> set[int]:
    """Pids of the worker processes that registered (worker id = host:pid:suffix)."""
    return {int(w.split(":")[-2]) for w in client.smembers(registry_workers(prefix))}


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_processes_share_the_work_and_a_dead_one_is_replaced(emq_env, client):
    """Two children serve one queue; a killed child is forked again; SIGTERM stops them all."""
    prefix = emq_env["EMQ_PREFIX"]
    sup = manage(emq_env, "emq_worker", "--processes", "2", "--concurrency", "1", "--grace", "5")
    try:
        first = wait_for(lambda: (p := _worker_pids(client, prefix)) and len(p) == 2 and p, what="two workers")
        assert sup.pid not in first
        refs = [jobs.slow_pid.enqueue(0.2) for _ in range(4)]
        wait_for(lambda: all(emq.get_job(r.id).state == "completed" for r in refs), what="jobs to complete")
        assert {emq.get_job(r.id).result for r in refs} == first  # one job at a time each: both served

        victim = min(first)
        os.kill(victim, signal.SIGKILL)
        wait_for(lambda: len(_worker_pids(client, prefix) - first) == 1, what="a replacement worker")
        pids = (first - {victim}) | (_worker_pids(client, prefix) - first)
        assert all(_alive(p) for p in pids)

        sup.send_signal(signal.SIGTERM)
        assert sup.wait(timeout=20) == 0
        wait_for(lambda: not any(_alive(p) for p in pids), what="children to exit with the supervisor")
    finally:
        if sup.poll() is None:
            sup.kill()
            sup.wait()


def test_burst_processes_exit_when_drained(emq_env):
    """With --burst every child drains and exits 0, and so does the supervisor."""
    refs = jobs.add.enqueue_many([((i, 1), {}) for i in range(50)])
    sup = manage(emq_env, "emq_worker", "--processes", "2", "--burst", stderr=subprocess.DEVNULL)
    assert sup.wait(timeout=30) == 0
    assert [emq.get_job(r.id).result for r in refs] == [i + 1 for i in range(50)]
