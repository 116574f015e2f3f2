"""Measure a k-partitioned queue on a private local 3-master Valkey Cluster.

    .venv/bin/python bench/cluster_partitions.py [--jobs 20000] [--groups 60] [--partitions 6] [--workers 3]

Enqueues the jobs in groups (job i of a group carries (i, seq)), drains them with real
``emq_worker --burst`` processes, then checks every job completed exactly once and each group's
jobs were claimed in the order enqueued, and prints jobs/s and commands/s per shard (INFO
commandstats of each node, reset before the drain) and how far each node is from their mean
(partitions get balanced hash tags, ``emq.core.topology.tag``: the goal is within ±20 %).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from pathlib import Path

from emq.core import stored

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=20_000)
    ap.add_argument("--groups", type=int, default=60)
    ap.add_argument("--partitions", type=int, default=6)
    ap.add_argument("--workers", type=int, default=3)
    ap.add_argument("--concurrency", type=int, default=16)
    a = ap.parse_args()

    from tests import cluster

    c = cluster.start(Path(tempfile.mkdtemp(prefix="emq-bench-cluster-")))
    try:
        run(c, a)
    finally:
        c.stop()


def run(c, a) -> None:
    env = {
        "EMQ_URL": c.url, "EMQ_CLUSTER": "true", "EMQ_PREFIX": f"bench-{uuid.uuid4().hex[:6]}",
        "EMQ_PARTITIONS": json.dumps({"clicks": a.partitions}), "EMQ_LOG_LEVEL": "WARNING",
        "DJANGO_SETTINGS_MODULE": "echd_project.settings",
    }
    os.environ.update(env)
    import django

    django.setup()
    from redis.cluster import key_slot

    import emq
    from emq.core import topology
    from tests import jobs
    from tests.procs import manage

    queues = emq.queue("clicks").partitions
    homes = {q.name: c.owner(key_slot(q.keys.ns.encode())) for q in queues}
    print(f"partitions -> node: {homes}")
    t0 = time.monotonic()
    per_group: dict[str, list] = {}
    for g in range(a.groups):
        n = a.jobs // a.groups + (1 if g < a.jobs % a.groups else 0)
        group = f"tenant-{g}"
        per_group[group] = jobs.add.using(queue="clicks", group=group).enqueue_many([((g, s), {}) for s in range(n)])
    mint_s = time.monotonic() - t0
    spread = Counter(topology.of_key(g, a.partitions) for g in per_group) if a.partitions > 1 else {0: a.groups}
    print(f"groups per partition: {dict(sorted(spread.items()))}")
    print(f"enqueued {a.jobs} jobs in {a.groups} groups: {mint_s:.2f}s ({a.jobs / mint_s:.0f} jobs/s)")

    for i in range(3):
        c.node(i).config_resetstat()
    t0 = time.monotonic()
    procs = [
        manage(env, "emq_worker", "--burst", "--queues", "clicks", "--concurrency", str(a.concurrency),
               stderr=subprocess.PIPE, text=True)
        for _ in range(a.workers)
    ]
    errs = [p.communicate(timeout=600)[1] for p in procs]
    drain_s = time.monotonic() - t0
    assert all(p.returncode == 0 for p in procs), "\n".join(e[-2000:] for e in errs)
    stats = [c.node(i).info("commandstats") for i in range(3)]
    print(f"drained by {a.workers} workers x {a.concurrency}: {drain_s:.2f}s ({a.jobs / drain_s:.0f} jobs/s)")
    busy_s = check(per_group, queues)
    print(f"first claim to last finish (server clock): {busy_s:.2f}s ({a.jobs / busy_s:.0f} jobs/s)")
    per_node = []
    for i, s in enumerate(stats):
        calls = sum(v["calls"] for v in s.values())
        evals = sum(s.get(f"cmdstat_{c}", {}).get("calls", 0) for c in ("evalsha", "fcall"))
        mine = [n for n, h in homes.items() if h == i]
        per_node.append(calls / drain_s)
        print(f"node {i} ({', '.join(mine) or 'no partition'}): {calls} commands, {calls / drain_s:.0f}/s "
              f"({evals} EVALSHA/FCALL, {evals / drain_s:.0f}/s)")
    mean = sum(per_node) / len(per_node)
    print("commands/s per node against their mean: "
          + ", ".join(f"{100 * (x / mean - 1):+.1f} %" for x in per_node) + " (goal: within ±20 %)")


def check(per_group: dict, queues) -> float:
    """Each job completed once; each group's jobs claimed in enqueue order (claimed ms non-decreasing)."""
    outcome: Counter = Counter()
    fifo_broken = 0
    span = [2**63, 0]  # server ms: first claim, last finish
    for refs in per_group.values():
        q = queues[int(refs[0].id.rsplit("~", 1)[1])] if len(queues) > 1 else queues[0]
        rows = stored.read_raw(q.client, [q.keys.job(r.id) for r in refs], ("state", "attempts", "claimed", "finished"))
        outcome.update((s, a) for s, a, _, _ in rows)
        claimed = [int(x) for _, _, x, _ in rows]
        span[0] = min(span[0], *claimed)
        span[1] = max(span[1], *(int(x) for *_, x in rows))
        fifo_broken += sum(1 for x, y in zip(claimed, claimed[1:], strict=False) if y < x)
    total = sum(outcome.values())
    stats = [q.client.hgetall(q.keys.stats) for q in queues]
    stale = sum(int(s.get("stale", 0)) for s in stats)
    done = sum(int(s.get("completed", 0)) for s in stats)
    print(f"jobs: {dict(outcome)}; completed count {done}; stale {stale}; FIFO inversions {fifo_broken}")
    assert outcome[("completed", "1")] == total == done and stale == 0 and fifo_broken == 0
    return (span[1] - span[0]) / 1000


if __name__ == "__main__":
    main()
