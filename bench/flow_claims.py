"""Claim throughput of the flow-control paths (issue 14), on a private embedded Valkey.

    python bench/flow_claims.py [--jobs 100000] [--rounds 3]

Measures the server's side of the hot path through the engine (no worker threads): jobs leased
per second by ``bclaim(100)`` loops, and minted per second by ``mint`` chunks of 1,000, for
    one group                    every job in one lane (the lone-lane fast path: one LPOP a batch)
    100,000 groups               one job a group: one ring rotation a job
    100,000 groups, 1,000 rated  the same, 1,000 of them rate-limited groups of 5 jobs at 2 per
                                 minute (each starts 2 and is held off the ring, 3 wait)
    100,000 groups, * rated      and a "*" limit too high to hold anyone: every start is logged
    priorities                   one group, every job with a priority from -100..100 (the sorted set)
    1,000 groups x 100           100 jobs a group: each group's lane outlives the batch (no lane closes)
Each figure is the median of --rounds runs on a fresh prefix; "server" is the claim scripts' own time
per job (INFO commandstats: evalsha usec / jobs), which the client's share of the machine moves less.
EMQ_TREE=<another checkout> runs the same on that tree's emq (e.g. main's, for a before/after).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(os.environ.get("EMQ_TREE", Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "echd_project.settings")
os.environ.setdefault("DEBUG", "1")  # the settings refuse the development key otherwise; nothing is served


def specs(n: int, group_of, priority_of=lambda i: 0):
    from emq.core.records import MintSpec

    return [MintSpec(id=uuid.uuid4().hex, name="bench.jobs.noop", args_json="[]", kwargs_json="{}",
                     group=group_of(i), due="", max_attempts=3, lease_ms=60000, max_stalled=1,
                     backoff=(1.0, 60.0), priority=priority_of(i)) for i in range(n)]


def run(label: str, all_specs, setup=None) -> dict:
    from emq.core.engine import Queue

    q = Queue(f"flow-{uuid.uuid4().hex[:6]}")
    if setup:
        setup(q)
    t0 = time.perf_counter()
    for start in range(0, len(all_specs), 1000):
        q.mint(all_specs[start : start + 1000])
    mint_s = time.perf_counter() - t0
    q.client.config_resetstat()
    claimed, t0 = 0, time.perf_counter()
    while True:
        got = len(q.bclaim(100, "bench"))
        if not got:
            break
        claimed += got
    claim_s = time.perf_counter() - t0
    stats = q.client.info("commandstats")  # bclaim is a function (FCALL)
    server_us = sum(stats.get(f"cmdstat_{c}", {}).get("usec", 0) for c in ("evalsha", "fcall"))
    return {"label": label, "minted_per_s": len(all_specs) / mint_s, "claimed": claimed,
            "claimed_per_s": claimed / claim_s, "server_us": server_us / max(claimed, 1)}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=100_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--only", default="")
    opts = ap.parse_args()
    import django

    django.setup()
    from django.conf import settings

    from emq.core import connection, embedded

    folder = Path(tempfile.mkdtemp(prefix="emq-bench-flow-"))
    settings.EMQ_URL, settings.EMQ_PREFIX = embedded.start(folder, persist=False), "emqflow"
    connection.reset()
    n = opts.jobs
    rated_groups = 1000

    def limit(q, each=False):
        if hasattr(q, "rates"):  # main's tree has no rate limits: the same jobs, unlimited
            if each:
                q.rates.set("*", 1_000_000, 60_000)  # every group's starts logged, none held by it
            for g in range(rated_groups):
                q.rates.set(f"r{g}", 2, 60_000)

    def rated() -> list:
        plain = specs(n - rated_groups * 5, lambda i: f"g{i}")
        return plain + specs(rated_groups * 5, lambda i: f"r{i % rated_groups}")

    scenarios = {
        "one group": lambda: run("one group", specs(n, lambda i: "one")),
        "100,000 groups": lambda: run("100,000 groups", specs(n, lambda i: f"g{i}")),
        "100,000 groups, 1,000 rated": lambda: run("rated", rated(), limit),
        "100,000 groups, * rated": lambda: run("each rated", rated(), lambda q: limit(q, each=True)),
        "1,000 groups x 100": lambda: run("1,000 x 100", specs(n, lambda i: f"h{i % 1000}")),
        "priorities": lambda: run("one group, priorities", specs(n, lambda i: "one", lambda i: (i * 37) % 201 - 100)),
    }
    try:
        for name, scenario in scenarios.items():
            if opts.only and opts.only not in name:
                continue
            rounds = [scenario() for _ in range(opts.rounds)]
            claim = statistics.median(r["claimed_per_s"] for r in rounds)
            mint = statistics.median(r["minted_per_s"] for r in rounds)
            server = statistics.median(r["server_us"] for r in rounds)
            print(f"{name:<28} claimed {rounds[0]['claimed']:>7,}  {claim:>10,.0f} jobs/s claimed  "
                  f"server {server:5.2f} us/job  {mint:>10,.0f} jobs/s minted", flush=True)
    finally:
        embedded.stop(folder)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
