"""Statistics per job name: what a worker ran is counted exactly, its durations land in the right buckets,
the Pump rolls minutes into ten-minute windows, and a job name's week costs a bounded amount of memory."""

from __future__ import annotations

import random
import time

import pytest

from emq.core import histogram
from emq.core.engine import Queue, stats
from emq.core.records import Claimed, Outcome
from emq.runtime.held import Held
from emq.runtime.tally import Tally
from emq.testing import run_until_empty
from tests import jobs
from tests.procs import wait_for

SLEEP = "tests.jobs.sleep_for"
FAIL = "tests.jobs.fail_if_odd"


def _now_ms(client) -> int:
    sec, usec = client.time()
    return int(sec) * 1000 + int(usec) // 1000


def _hour(queue: str, name: str, client) -> histogram.Window:
    """The last hour of a name (stats.TOTAL: the queue's) summed into one window."""
    windows = stats.series([Queue(queue)], name, stats.SPANS["hour"], _now_ms(client))
    return histogram.merged(0, [w.slots for w in windows])


@pytest.mark.slow
@pytest.mark.timing
def test_a_known_workload_is_counted_exactly_and_its_p95_is_within_the_bucket_error(emq_env, client):
    """1,000 jobs sleeping 50, 100 or 400 ms (600, 300 and 100 of them): 1,000 completed, and the p50 and
    p95 of their run times within histogram.ERROR of 50 and 400 ms plus the worker's hand-off."""
    sleeps = [0.05] * 600 + [0.1] * 300 + [0.4] * 100
    random.Random(7).shuffle(sleeps)
    jobs.sleep_for.using(queue="known").enqueue_many([((s,), {}) for s in sleeps])
    started = time.monotonic()
    run_until_empty(["known"], concurrency=100)
    wall_ms = (time.monotonic() - started) * 1000
    for name in (SLEEP, stats.TOTAL):
        w = _hour("known", name, client)
        assert (w.settled, w.completed, w.failed, w.retried, w.dead) == (1000, 1000, 0, 0, 0)
        assert w.run.count == w.wait.count == 1000
        slack = 150  # ms a job's run may count beyond its sleep: its start on a thread, the finish's round trip
        for q, sleep in ((0.50, 50), (0.95, 400)):
            estimate = w.run.quantile(q)
            assert sleep / (1 + histogram.ERROR) <= estimate <= (sleep + slack) * (1 + histogram.ERROR), (q, estimate)
        # The slowest single run: one of 100 threads on 2 cores may wait for the GIL well past the slack
        # (580 ms was seen on the cluster); the quantiles above bound the figures, this that the max is kept.
        assert 400 <= w.run.max_ms < 1000 and w.run.buckets[histogram.bucket(w.run.max_ms)] >= 1
        assert w.wait.max_ms <= wall_ms and w.wait.p50 <= w.wait.p95 <= w.wait.max_ms
    assert stats.names([Queue("known")]) == [SLEEP]


def test_failures_count_as_failed_then_retried_or_dead(emq_env, client):
    """fail_if_odd of 0..9 (2 attempts): 5 complete, 5 fail twice (the first retried, the second dead)."""
    jobs.fail_if_odd.using(queue="fails").enqueue_many([((i,), {}) for i in range(10)])
    run_until_empty(["fails"])
    w = _hour("fails", FAIL, client)
    assert (w.settled, w.completed, w.failed, w.retried, w.dead) == (15, 5, 10, 5, 5)
    assert w.run.count == 15


def test_stalls_the_sweep_settles_count_as_failed_then_retried_or_dead(emq_env, client):
    """Two jobs claimed by a worker that then died: at the sweep one goes back to its lane (retried), one is
    dead (max_stalled=0); the worker's tally never sees them, the sweep counts them, by name and in the total."""
    jobs.add.using(queue="stalls", max_stalled=0).enqueue(1, 1)
    jobs.add.using(queue="stalls").enqueue(2, 2)
    q = Queue("stalls")
    claimed = q.bclaim(2, "worker-that-died")
    assert q.extend_locks([(c.id, c.token) for c in claimed], 200) == ["ok", "ok"]
    swept: list[str] = []
    wait_for(lambda: swept.extend(q.sweep()) or len(swept) == 2, 5, every=0.05, what="both leases to be swept")
    for name in ("tests.jobs.add", stats.TOTAL):
        w = _hour("stalls", name, client)
        assert (w.settled, w.completed, w.failed, w.retried, w.dead) == (2, 0, 2, 1, 1), name
        assert w.run.count == 0  # no run time is known of a worker that died


def _held(name: str, token: int = 1, wait: int = 3, started: float = 0.0) -> Held:
    job = Claimed(id=f"{name}-{token}", token=token, name=name, args=[], kwargs={}, lease_ms=1000, max_attempts=3,
                  backoff=(1.0, 1.0), due_ms=1000, claimed_ms=1000 + wait)
    return Held(Queue("t"), job, started)


def test_a_tally_counts_what_the_server_decided_not_what_the_worker_sent():
    """A stale or missing item counts nothing, a spared one nothing, a corrupt one dead without a run; a
    completion of a name counts its run and wait in their buckets; the total sums the names."""
    t, now = Tally(), time.monotonic()
    done = [(_held("a", 1, wait=0, started=now - 0.02), Outcome("a-1", 1, "completed", "null")),
            (_held("a", 2, wait=5000, started=now - 0.02), Outcome("a-2", 2, "completed", "null")),
            (_held("b", 1), Outcome("b-1", 1, "failed", "boom", 10)),
            (_held("b", 2), Outcome("b-2", 2, "failed", "boom")),
            (_held("b", 3), Outcome("b-3", 3, "completed", "null")),
            (_held("c", 1), Outcome("c-1", 1, "spared", "", 0)),
            (_held("c", 2), Outcome("c-2", 2, "corrupt", "args is not JSON")),
            (_held("c", 3), Outcome("c-3", 3, "completed", "null"))]
    t.note("t", done, ["completed", "completed", "scheduled", "dead", "stale", "ready", "dead", "missing"])
    sent = t.take("t")
    assert t.take("t") is None
    a, b, c, total = (histogram.Window(0, tuple(sent[n].get(i, 0) for i in range(max(sent[n]) + 1)))
                      for n in ("a", "b", "c", ""))
    assert (a.settled, a.completed, a.failed) == (2, 2, 0)
    assert (b.settled, b.completed, b.failed, b.retried, b.dead) == (2, 0, 2, 1, 1)
    assert (c.settled, c.dead, c.run.count) == (1, 1, 0)
    assert (total.settled, total.completed, total.failed, total.retried, total.dead) == (5, 2, 2, 1, 2)
    assert a.wait.buckets[0] == 1 and a.wait.buckets[histogram.bucket(5000)] == 1 and a.wait.max_ms == 5000
    assert 20 <= a.run.max_ms < 1000 and a.run.buckets[histogram.bucket(a.run.max_ms)] == 2


def test_a_tally_waits_a_second_unless_asked_for_at_once():
    t = Tally()
    t.note("t", [(_held("a"), Outcome("a-1", 1, "completed", "null"))], ["completed"])
    now = time.monotonic()
    assert t.take("t", now) is None and 0 < t.due_in("t", now) <= 1.0
    assert t.take("t", now + 1.0)[""][0] == 1 and t.due_in("t", now) is None


def test_the_bucket_estimates_stay_within_the_stated_error():
    """Every duration from 1 ms to 10 minutes: its bucket's estimate is within histogram.ERROR of it."""
    for ms in [*range(1, 5000), *range(5000, 600_000, 997)]:
        estimate = histogram.Durations(tuple(1 if b == histogram.bucket(ms) else 0 for b in range(85)), 10**9)
        assert abs(estimate.p50 - ms) <= histogram.ERROR * ms + 1e-9, ms


def test_the_pump_rolls_minutes_into_a_ten_minute_window_kept_a_week(emq_env, client):
    """A roll sums a window's minutes (the maxima: their maximum); minute windows live 75 minutes, rolled
    ones 7 days after their window ends; a second roll writes the same."""
    jobs.add.using(queue="roll").enqueue_many([((i, 1), {}) for i in range(30)])
    run_until_empty(["roll"])
    q = Queue("roll")
    assert q.keep.roll_stats() == -1
    now = _now_ms(client)
    minutes = stats.series([q], "tests.jobs.add", stats.SPANS["hour"], now)[-10:]
    ten = stats.series([q], "tests.jobs.add", stats.SPANS["week"], now)[-1]
    expected = histogram.merged(ten.start_ms, [m.slots for m in minutes if m.start_ms >= ten.start_ms])
    assert ten.completed == 30 and ten.slots == expected.slots
    assert q.keep.roll_stats() == -1 and stats.series([q], "tests.jobs.add", stats.SPANS["week"], now)[-1] == ten
    minute_key = q.keys.stat("m", now // 60_000, "tests.jobs.add")
    ten_key = q.keys.stat("t", now // 600_000, "tests.jobs.add")
    assert 0 < client.pttl(minute_key) <= 75 * 60_000
    assert 7 * 86_400_000 < client.pttl(ten_key) <= 7 * 86_400_000 + 600_000


def test_a_partitioned_queue_sums_its_partitions(emq_env, client, settings):
    settings.EMQ_PARTITIONS = {"wide": 3}
    jobs.add.using(queue="wide").enqueue_many([((i, 1), {}, ) for i in range(12)])
    run_until_empty(["wide"])
    from emq.core.logical import partitions

    parts = partitions(["wide"])
    assert len(parts) == 3
    hour = stats.series(parts, stats.TOTAL, stats.SPANS["hour"], _now_ms(client))
    assert sum(w.completed for w in hour) == 12

# A job name's memory for a week of statistics, at most (the figure docs/reference/statistics.md states):
# its minute windows of the last hour (60) and its ten-minute windows of 7 days (1,008), each as full as
# a name whose runs spread over 1 ms - 2 s and waits over 0 - 0.5 s makes it (every bucket in between used).
BYTES_PER_NAME = 440_000


@pytest.mark.one_server
def test_a_job_names_week_of_statistics_stays_within_the_stated_memory(emq_env, client):
    """Ten names, each with 60 minute windows and 1,008 ten-minute windows as full as a busy name's:
    MEMORY USAGE of their keys over ten stays under BYTES_PER_NAME."""
    q, names = Queue("mem"), [f"app.jobs.task_{i}" for i in range(10)]
    slots = {0: 10_000, 1: 9_900, 2: 100, 3: 60, 4: 40, 5: 1999, 6: 499}
    for b in range(histogram.bucket(1999) + 1):
        slots[7 + 2 * b] = 300
    for b in range(histogram.bucket(499) + 1):
        slots[8 + 2 * b] = 300
    q.finish([], {n: slots for n in names})  # the current minute's windows, written by the finish script
    assert q.keep.roll_stats() == -1  # and the current ten minutes', rolled
    now = _now_ms(client)
    used = 0
    for n in names:
        for resolution, current, count in (("m", now // 60_000, 60), ("t", now // 600_000, 1008)):
            dump = client.dump(q.keys.stat(resolution, current, n))
            for w in range(current - count + 1, current):
                client.restore(q.keys.stat(resolution, w, n), 600_000, dump)
            used += sum(client.memory_usage(q.keys.stat(resolution, w, n), samples=0)
                        for w in range(current - count + 1, current + 1))
    assert used / len(names) <= BYTES_PER_NAME, used / len(names)
