"""Fault suite, a server that stands still (DEBUG SLEEP, a fork of a large dataset, a slow script, a
paused VM): leases run out that no worker could renew. The Pump's tick sees the server's clock jump
past the time it planned to run and gives those leases one more lease period, as after a restart,
for the stall's last EMQ_STALL_GRACE seconds; and a worker whose lease was taken anyway (its renewal
answers stale) stops that attempt, so no job runs to the end twice.

Before: ``DEBUG SLEEP 8`` with 20 running jobs under 3 s leases, the first sweep after the stall
reclaimed all 20 and the same worker ran both copies at once: 20 of 20 ran to the end twice.
"""

from __future__ import annotations

import time
import uuid
from collections import Counter

import pytest
import redis

from emq.core.engine import Queue
from emq.testing import check_invariants
from tests import jobs, records
from tests.private_server import PrivateValkey
from tests.procs import manage, server_ms, wait_for

TTL, PARK = 30_000, 15_000


def _claim(q, n: int, lease: float) -> list:
    for i in range(n):
        jobs.add.using(lease=lease).enqueue(i, 1)
    return q.bclaim(n, "w")


def _past_leases(client, q, claimed, by_ms: int = 300) -> None:
    """Wait, on the server's clock, until every lease of claimed ran out by_ms ago."""
    last = max(client.zscore(q.keys.leases, c.id) for c in claimed)
    wait_for(lambda: server_ms(client) > last + by_ms, timeout=10, what="the leases to run out")


def test_a_tick_late_past_its_plan_keeps_the_leases_that_ran_out_meanwhile(emq_env, client):
    """The tick planned to run at the first lease's expiry and ran later, its Pump on time: the server
    stood still. Nothing is reclaimed; the leases get one more lease period and their worker renews."""
    q = Queue("default")
    claimed = _claim(q, 5, 1)
    first = q.tick("p", TTL, PARK)
    assert first.leader and first.park_ms <= 1000
    _past_leases(client, q, claimed)
    tick = q.tick("p", TTL, PARK, late_ms=0)
    assert (tick.reclaimed, tick.graced) == (0, 5) and tick.stall_ms >= 300, tick
    assert min(client.zscore(q.keys.leases, c.id) for c in claimed) > server_ms(client) + 500
    assert q.extend_locks([(c.id, c.token) for c in claimed], 1000) == ["ok"] * 5
    check_invariants(q)


def test_a_lease_is_forgiven_once_a_grant_and_a_late_pump_is_no_stall(emq_env, client):
    """The Pump's own lateness (late_ms) is no stall: nothing is forgiven. And a lease forgiven once and
    not renewed since is reclaimed at its next expiry, however late the next tick is."""
    q = Queue("default")
    claimed = _claim(q, 3, 1)
    q.tick("p", TTL, PARK)
    planned = time.monotonic() + 1
    _past_leases(client, q, claimed)
    tick = q.tick("p", TTL, PARK, late_ms=int((time.monotonic() - planned) * 1000) + 50)
    assert (tick.reclaimed, tick.graced, tick.stall_ms) == (3, 0, 0), tick

    claimed = _claim(q, 3, 1)
    assert len(claimed) == 3
    q.tick("p", TTL, PARK)
    _past_leases(client, q, claimed)
    assert q.tick("p", TTL, PARK).graced == 3  # a stall: forgiven
    _past_leases(client, q, claimed)
    again = q.tick("p", TTL, PARK)  # late again, nobody renewed: reclaimed
    assert (again.reclaimed, again.graced) == (3, 0) and again.stall_ms > 0, again
    check_invariants(q)


def test_a_stall_with_more_expired_leases_than_a_tick_takes_is_forgiven_over_the_next_ticks(emq_env, client):
    q = Queue("default")
    claimed = _claim(q, 5, 1)
    q.tick("p", TTL, PARK, limit=2)
    _past_leases(client, q, claimed)
    ticks = [q.tick("p", TTL, PARK, limit=2) for _ in range(4)]
    assert [(t.graced, t.reclaimed) for t in ticks] == [(2, 0), (2, 0), (1, 0), (0, 0)], ticks
    check_invariants(q)


def test_a_new_leader_never_takes_the_gap_for_a_stall(emq_env, client):
    """A Pump that took the lead over from one that died (with its worker, maybe) reclaims as usual."""
    q = Queue("default")
    claimed = _claim(q, 3, 1)
    q.tick("p1", TTL, PARK)
    q.resign("p1")
    _past_leases(client, q, claimed)
    tick = q.tick("p2", TTL, PARK)
    assert tick.leader and (tick.reclaimed, tick.graced) == (3, 0), tick
    check_invariants(q)


def test_a_stall_longer_than_the_grace_is_forgiven_for_its_last_grace_seconds_only(emq_env, client, settings):
    """EMQ_STALL_GRACE = 1 s and a stall of ~3.4 s: the leases that ran out ~2.4 s before the server
    served again are reclaimed, those that ran out in its last second are kept."""
    settings.EMQ_STALL_GRACE = 1
    q = Queue("default")
    short = _claim(q, 3, 1)
    long = _claim(q, 2, 3)
    q.tick("p", TTL, PARK)
    start = min(client.zscore(q.keys.leases, c.id) for c in short) - 1000
    wait_for(lambda: server_ms(client) > start + 3400, timeout=10)
    assert server_ms(client) < start + 3900, "the machine is too slow for this test's windows"
    tick = q.tick("p", TTL, PARK)
    assert (tick.reclaimed, tick.graced) == (3, 2), tick
    assert {records.field(client, q.keys.job(c.id), "state") for c in short} == {"ready"}
    assert q.extend_locks([(c.id, c.token) for c in long], 3000) == ["ok", "ok"]
    check_invariants(q)


def test_no_grace_when_it_is_turned_off(emq_env, client, settings):
    settings.EMQ_STALL_GRACE = 0
    q = Queue("default")
    claimed = _claim(q, 2, 1)
    q.tick("p", TTL, PARK)
    _past_leases(client, q, claimed)
    tick = q.tick("p", TTL, PARK)
    assert (tick.reclaimed, tick.graced) == (2, 0) and tick.stall_ms > 0, tick


# -- real workers, a real DEBUG SLEEP ----------------------------------------------------------------


@pytest.fixture
def private(tmp_path, settings):
    server = PrivateValkey(tmp_path, "--enable-debug-command", "yes").start()
    settings.EMQ_URL, settings.EMQ_PREFIX, settings.EMQ_CLUSTER = server.url, f"stall-{uuid.uuid4().hex[:8]}", False
    env = {"EMQ_URL": server.url, "EMQ_PREFIX": settings.EMQ_PREFIX, "EMQ_CLUSTER": "false"}
    yield server, env
    server.stop()


def _lines(path) -> Counter:
    return Counter(" ".join(line.split()[:2]) for line in path.read_text().splitlines()) if path.exists() else Counter()


def _stall_under_20_jobs(private, tmp_path) -> tuple[Counter, Counter, str, object]:
    """20 jobs of 3 s leases running 14 s in one worker with room for 40, the server asleep 8 s
    meanwhile. This test is the Pump: its tick reaches the server right behind the DEBUG SLEEP, ahead
    of the worker's renewals (the order that re-ran every job before). Returns what the jobs noted,
    their states, the worker's log and the tick that ran after the stall."""
    server, env = private
    notes, log = tmp_path / "runs.txt", tmp_path / "worker.log"
    with open(log, "w") as err:
        worker = manage(env, "emq_worker", "--concurrency", "40", "--no-pump", stderr=err)
        try:
            refs = [jobs.outlives_a_stall.enqueue(str(notes), f"j{i}", 14.0) for i in range(20)]
            wait_for(lambda: sum(k.endswith("start") for k in _lines(notes)) == 20, timeout=30,
                     what="all 20 jobs to start")
            time.sleep(1.5)  # a renewal or two: the leases are the worker's own, renewed every second
            q = Queue("default", client=redis.Redis.from_url(server.url, socket_timeout=30, decode_responses=True))
            assert q.tick("p", TTL, PARK).leader
            sleeper = redis.Redis.from_url(server.url, socket_timeout=30).connection_pool.get_connection()
            sleeper.send_command("DEBUG", "SLEEP", "8")  # sent, not waited for: the server sleeps from now
            time.sleep(0.05)
            after = q.tick("p", TTL, PARK)  # waits in the server's buffer for the stall to end
            sleeper.read_response()
            wait_for(lambda: all(records.field(q.client, q.keys.job(r.id), "state") == "completed" for r in refs),
                     timeout=60, what="every job to complete")
            states = Counter(records.field(q.client, q.keys.job(r.id), "state") for r in refs)
            check_invariants(q)
            assert worker.poll() is None, "the worker died"
        finally:
            worker.terminate()
            worker.wait(timeout=30)
    return _lines(notes), states, log.read_text(), after


@pytest.mark.slow
@pytest.mark.timing
def test_a_stall_of_8_s_under_3_s_leases_runs_no_job_to_the_end_twice(private, tmp_path):
    """The issue's case: DEBUG SLEEP 8 with 20 running jobs under 3 s leases. The tick after the stall
    forgives the 20 leases, none is reclaimed or stopped, each job runs to its end once."""
    lines, states, log, after = _stall_under_20_jobs(private, tmp_path)
    ends = [n for k, n in lines.items() if k.endswith("end")]
    print(f"\nstall 8 s, grace 60 s: states={dict(states)} ends={Counter(ends)} tick={after} "
          f"stopped={sum(k.endswith('stopped') for k in lines)}")
    assert states == Counter({"completed": 20})
    assert len(ends) == 20 and set(ends) == {1}, "a job ran to its end twice"
    assert after.reclaimed == 0 and after.stall_ms > 4000, after
    assert not any(k.endswith("stopped") for k in lines) and "lost its lease" not in log


@pytest.mark.slow
def test_a_stall_longer_than_the_grace_reclaims_and_the_worker_stops_the_old_attempts(private, tmp_path, settings):
    """EMQ_STALL_GRACE = 2 s and a stall of 8 s: the leases ran out ~5 s before it ended, so the tick
    reclaims them as usual and the worker claims them again at once; told stale at its next renewal,
    it stops each old attempt (LeaseExpired inside the job): still no job runs to the end twice."""
    settings.EMQ_STALL_GRACE = 2
    lines, states, log, after = _stall_under_20_jobs(private, tmp_path)
    ends = [n for k, n in lines.items() if k.endswith("end")]
    stopped = sum(n for k, n in lines.items() if k.endswith("stopped"))
    print(f"\nstall 8 s, grace 2 s: states={dict(states)} ends={Counter(ends)} tick={after} "
          f"stopped={stopped} 'lost its lease' lines={log.count('lost its lease')}")
    assert states == Counter({"completed": 20})
    assert len(ends) == 20 and set(ends) == {1}, "a job ran to its end twice"
    assert after.reclaimed > 0 and after.graced == 0, after
    assert stopped == after.reclaimed == log.count("lost its lease (stale)")


@pytest.mark.slow
def test_a_stale_renewal_stops_the_attempt_and_it_never_reports_done(private, tmp_path):
    """The lease taken under the worker (its token moved on): the next renewal answers stale, the
    worker raises LeaseExpired inside the job, which never reaches its end."""
    server, env = private
    notes, log = tmp_path / "runs.txt", tmp_path / "worker.log"
    with open(log, "w") as err:
        worker = manage(env, "emq_worker", "--concurrency", "2", stderr=err)
        try:
            ref = jobs.outlives_a_stall.enqueue(str(notes), "j", 30.0)
            wait_for(lambda: _lines(notes)["j start"] == 1, timeout=20, what="the job to start")
            q = Queue("default")
            records.add(q.client, q.keys.job(ref.id), "attempts", 1)  # as if reclaimed and claimed elsewhere
            wait_for(lambda: _lines(notes)["j stopped"] == 1, timeout=10, what="the attempt to be stopped")
            assert _lines(notes)["j end"] == 0
            assert "lost its lease (stale): stopping it" in log.read_text()
            assert worker.poll() is None
        finally:
            worker.terminate()
            worker.wait(timeout=30)
