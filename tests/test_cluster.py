"""Scale-out on the local cluster (EMQ_TEST_CLUSTER=1): a partitioned queue over the shards, and a
queue's slot moved to another node while workers drain it — nothing lost, nothing run twice.

The slot moves with the classic protocol
(SETSLOT IMPORTING/MIGRATING, MIGRATE in batches, SETSLOT NODE) while two real worker processes
drain 10,000 jobs; scripts on the moving slot are refused (TRYAGAIN) and retried by scripts.run.
Without the slot guard (KEYS[2]) this test strands ~8,000 jobs: scripts ASK-redirected to the
target ran there against a half-moved queue.
"""

from __future__ import annotations

import os
import subprocess
import threading
from collections import Counter

import pytest
from redis.cluster import key_slot

import emq
from emq.core import stored
from emq.core.engine import Queue
from tests import cluster, jobs, records
from tests.procs import manage, wait_for

pytestmark = pytest.mark.skipif(os.environ.get("EMQ_TEST_CLUSTER") != "1", reason="needs EMQ_TEST_CLUSTER=1")

N = 10_000


@pytest.fixture
def cluster_env(valkey_cluster, settings):
    """emq pointed at the local cluster under a fresh prefix."""
    from emq.testing import isolated

    settings.EMQ_CLUSTER = True
    with isolated(url=valkey_cluster.url) as prefix:
        yield {"EMQ_URL": valkey_cluster.url, "EMQ_PREFIX": prefix, "EMQ_CLUSTER": "true"}


def states(q: Queue, ids: list[str]) -> list[tuple[str, str]]:
    return [tuple(x) for x in stored.read_raw(q.client, [q.keys.job(job_id) for job_id in ids], ("state", "attempts"))]


def test_a_slot_migration_during_a_drain_loses_nothing_and_runs_nothing_twice(cluster_env, valkey_cluster):
    q = Queue("reshard")
    # 2 ms a job under 2 x 4 threads: the drain takes >= 2.5 s, longer than the migration, whatever
    # the workers' speed (no-op jobs drained 10,000 before a migration of 50 keys a step ended).
    refs = jobs.sleep_for.using(queue="reshard").enqueue_many([((0.002,), {})] * N)
    slot = key_slot(q.keys.ns.encode())
    source = valkey_cluster.owner(slot)
    dest = (source + 1) % 3
    env = {**cluster_env, "EMQ_LOG_LEVEL": "WARNING"}
    workers = [
        manage(env, "emq_worker", "--burst", "--queues", "reshard", "--concurrency", "4",
               stderr=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    logs: list[str] = ["", ""]

    def collect(i: int) -> None:
        logs[i] = workers[i].communicate(timeout=110)[1]

    readers = [threading.Thread(target=collect, args=(i,)) for i in range(2)]
    for t in readers:
        t.start()
    wait_for(lambda: int(q.client.hget(q.keys.stats, "completed") or 0) >= N // 5, timeout=60, what="drain under way")
    moved = cluster.migrate_slot(valkey_cluster, slot, dest, batch=50, pause=0.005)
    completed_at_move = int(q.client.hget(q.keys.stats, "completed") or 0)
    print(f"\nslot migration: {moved} keys moved; {completed_at_move} of {N} jobs completed when it ended")
    for t in readers:
        t.join()
    assert [w.returncode for w in workers] == [0, 0], "\n".join(x[-3000:] for x in logs)

    assert valkey_cluster.owner(slot) == dest and moved > N // 2
    assert completed_at_move < N, "the migration must overlap the drain"
    final = states(q, [r.id for r in refs])
    assert final.count(("completed", "1")) == N, Counter(final).most_common(5)
    stats = q.client.hgetall(q.keys.stats)
    assert (int(stats["completed"]), int(stats.get("stale", 0)), int(stats.get("reclaimed", 0))) == (N, 0, 0)
    text = "".join(logs)
    assert "CROSSSLOT" not in text and "Traceback" not in text, text[-3000:]



def test_a_script_on_a_migrating_slot_is_refused_then_runs_once_on_the_new_owner(cluster_env, valkey_cluster):
    """While a queue's keys are split between two nodes a claim waits (TRYAGAIN); then it runs, once."""
    q = Queue("moving")
    ref = jobs.add.using(queue="moving").enqueue(1, 2)
    slot = key_slot(q.keys.ns.encode())
    dest = (valkey_cluster.owner(slot) + 1) % 3

    def tryagain() -> int:
        return valkey_cluster.node(dest).info("errorstats").get("errorstat_TRYAGAIN", {}).get("count", 0)

    refused_before = tryagain()
    src = cluster.begin_migration(valkey_cluster, slot, dest)
    claimed: list = []
    claimer = threading.Thread(target=lambda: claimed.extend(q.bclaim(5, "w")))
    claimer.start()
    wait_for(lambda: tryagain() > refused_before + 3, what="the claim to be refused on the importing node")
    assert claimed == [] and records.field(valkey_cluster.node(src), q.keys.job(ref.id), "state") == "ready"
    cluster.move_keys(valkey_cluster, slot, src, dest)
    cluster.end_migration(valkey_cluster, slot, src, dest)
    claimer.join(timeout=10)
    assert [c.id for c in claimed] == [ref.id] and claimed[0].token == 1
    assert records.field(valkey_cluster.node(dest), q.keys.job(ref.id), "state") == "active"
    assert q.bclaim(5, "w") == []


def test_a_k6_partitioned_queue_spreads_over_the_shards_with_fifo_per_group(cluster_env, valkey_cluster, settings):
    """3,000 jobs in 60 groups over 6 partitions: each completes once, each group claimed in order."""

    settings.EMQ_PARTITIONS = {"clicks": 6}
    env = {**cluster_env, "EMQ_PARTITIONS": '{"clicks": 6}', "EMQ_LOG_LEVEL": "WARNING"}
    per_group = {
        g: jobs.add.using(queue="clicks", group=f"t{g}").enqueue_many([((g, s), {}) for s in range(50)])
        for g in range(60)
    }
    homes = {valkey_cluster.owner(key_slot(q.keys.ns.encode())) for q in emq.queue("clicks").partitions}
    assert len(homes) >= 2, "six partitions should not all hash to one node"
    workers = [manage(env, "emq_worker", "--burst", "--queues", "clicks", "--concurrency", "8") for _ in range(2)]
    assert [w.wait(timeout=90) for w in workers] == [0, 0]
    for refs in per_group.values():
        q = Queue(f"clicks#{refs[0].id.rsplit('~', 1)[1]}")
        rows = stored.read_raw(q.client, [q.keys.job(r.id) for r in refs], ("state", "attempts", "claimed"))
        assert {(s, a) for s, a, _ in rows} == {("completed", "1")}
        claimed = [int(c) for *_, c in rows]
        assert claimed == sorted(claimed), "a group's jobs were claimed out of order"
    assert emq.queue("clicks").counts().completed == 3000
