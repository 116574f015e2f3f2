"""The worker claims beyond its free threads only the jobs its threads end during one round trip, and
with short jobs keeps its next round trip on the wire while it starts the last one's jobs (``rounds``)."""

from __future__ import annotations

import threading
from types import SimpleNamespace

import pytest
import redis

from emq.core.engine import Queue
from emq.core.wire import Line
from emq.runtime.prefetch import Prefetch
from emq.runtime.worker import Worker
from tests import jobs
from tests.conftest import on_the_cluster


def _stays(p: Prefetch, trip: float, stay: float, now: float = 100.0) -> int:
    p.tripped(trip)
    p.arrived(now, [SimpleNamespace(started=now - stay)] * 4)
    return p.extra


def test_the_prefetch_is_what_the_threads_end_in_one_round_trip_at_most_its_limit():
    assert Prefetch(16, 16).extra == 0  # nothing measured yet: the first claim is for the threads
    assert _stays(Prefetch(16, 16), trip=0.0004, stay=0.00005) == 16  # no-op jobs: capped at the limit
    assert _stays(Prefetch(16, 16), trip=0.0004, stay=0.002) == 3  # 16 x 0.4 / 2 ms
    assert _stays(Prefetch(16, 16), trip=0.0004, stay=0.5) == 0  # longer than a round trip: none
    assert _stays(Prefetch(16, 0), trip=0.0004, stay=0.00005) == 0  # --prefetch 0
    p = Prefetch(16, 16)
    _stays(p, trip=0.0004, stay=0.00005)
    for _ in range(30):  # the job mix turns slow: the prefetch follows within a few batches
        _stays(p, trip=0.0004, stay=0.5)
    assert p.extra == 0


def _run(w: Worker, q: Queue) -> int:
    """Run w in burst mode; return the most jobs the server saw active at once while it ran."""
    t = threading.Thread(target=w.run)
    t.start()
    most = 0
    while t.is_alive():
        most = max(most, q.counts().active)
    t.join(timeout=60)
    assert not t.is_alive()
    return most


def test_a_worker_of_short_jobs_prefetches_and_runs_each_once(emq_env, request):
    """On a plain server it pipelines; on a cluster (no connection of its own) it claims for its threads."""
    refs = jobs.add.enqueue_many([((i, 1), {}) for i in range(3_000)])
    q = Queue("default")
    w = Worker(["default"], concurrency=16, pump=False, burst=True, park_timeout=0.5)
    _run(w, q)
    if on_the_cluster(request):
        assert w.rounds.prefetch.extra == 0 and w.rounds.kept == 0
    else:  # it pipelined (on a loaded host a job's stay may grow past what keeps a prefetch by the end)
        assert w.rounds.kept > 0, (w.rounds.prefetch.trip, w.rounds.prefetch.stay)
    assert not w.rounds.flying and w.rounds.claiming == 0
    assert w.processed == 3_000 and q.counts().completed == 3_000
    assert {q.get_job(r.id).result for r in refs[:50]} == {i + 1 for i in range(50)}


@pytest.mark.timing  # "longer than a round trip" holds for 20 ms jobs on a quiet machine, not under a loaded suite
def test_jobs_longer_than_a_round_trip_are_never_claimed_beyond_the_threads(emq_env):
    """A long job must not wait here behind another while an idle worker could run it."""
    jobs.sleep_for.enqueue_many([((0.02,), {}) for _ in range(60)])
    q = Queue("default")
    w = Worker(["default"], concurrency=4, pump=False, burst=True, park_timeout=0.5)
    assert _run(w, q) <= 4
    assert w.rounds.prefetch.extra == 0 and w.processed == 60 and w.rounds.kept == 0


def test_prefetch_zero_claims_for_free_threads_only(emq_env):
    jobs.add.enqueue_many([((i, 1), {}) for i in range(1_000)])
    q = Queue("default")
    w = Worker(["default"], concurrency=4, pump=False, burst=True, park_timeout=0.5, prefetch=0)
    assert _run(w, q) <= 4
    assert w.rounds.prefetch.extra == 0 and w.processed == 1_000


@pytest.mark.one_server  # it cuts every connection that runs a script: the suite's other processes' too
def test_connections_cut_while_round_trips_are_in_flight_lose_no_job(emq_env, client, request):
    """The loop's connection is closed by the server again and again while it pipelines: the outcomes
    in flight are sent again, and jobs whose claims were lost come back when their 1 s leases end."""
    if on_the_cluster(request):
        pytest.skip("a worker on a cluster reads each round trip at once (no connection of its own)")
    # A job whose claim is lost twice would end dead as stalled under the default EMQ_MAX_STALLED = 1.
    refs = jobs.add.using(lease=1, max_stalled=10).enqueue_many([((i, 1), {}) for i in range(3_000)])
    q = Queue("default")
    w = Worker(["default"], concurrency=4, burst=True, park_timeout=0.5)
    t = threading.Thread(target=w.run)
    t.start()
    cuts = 0
    while t.is_alive() and cuts < 20:
        for c in client.client_list():
            if c.get("cmd", "").startswith(("fcall", "evalsha")) and c.get("id"):
                cuts += client.client_kill_filter(_id=c["id"])
    t.join(timeout=60)
    print(f"\n3,000 jobs, the loop's connection cut {cuts} times: {w.processed} outcomes, "
          f"{w.rounds.kept} passes kept a round trip on the wire")
    assert not t.is_alive() and cuts > 0
    assert q.counts().completed == 3_000
    assert {q.get_job(r.id).state for r in refs} == {"completed"}


def test_a_line_reads_round_trips_in_the_order_sent_and_settle_frees_its_connection(emq_env, client, emq_isolated):
    """wire.Line: two requests on the wire at once, their replies read oldest first; ``settle`` reads
    ahead so that the client (whose one connection the line may hold) serves another call at once."""
    if not isinstance(client, redis.Redis) or isinstance(client, redis.RedisCluster):
        pytest.skip("a line is one connection of a plain client")
    key = f"{emq_isolated}:line"
    line = Line(client)
    line.send([("SET", key, "1")])
    line.send([("INCR", key), ("GET", key), ("HGET", key, "x")])
    assert len(line) == 2 and line.conn is not None
    assert line.read() == ["OK"]
    line.settle()
    assert line.conn is None and len(line) == 1
    assert client.get(key) == "2"  # the client's connection is free again
    two, text, wrong = line.read()
    assert two == 2 and text == "2" and isinstance(wrong, redis.ResponseError)  # an error reply is a value
    assert len(line) == 0
