"""The memory phase: what one queued job costs the server, measured at 1,000,000 queued."""

from __future__ import annotations

import random
import time

from bench import jobs, record
from bench.harness import Ctx, Progress
from emq.core import stored

FILL = 10_000  # jobs per enqueue_many: each one pipelines 10 mint chunks of 1,000
RECORDS = 200_000  # records written alone, as a hash and as one packed value


def memory(ctx: Ctx) -> None:
    """10. Server bytes per queued no-op job at 1,000,000 queued (bulk mint), then the queue is deleted.

    INFO memory's used_memory before and after the fill, divided by the jobs: job hashes, the
    lane's list of ids, the queue's counters. A shared server (--url) counts other clients' keys
    too, so the figure is only taken on a private one.
    """
    if not ctx.private:
        ctx.results["memory"] = {"skipped": "INFO memory needs a private server"}
        return
    n = ctx.n(1_000_000, 100_000)
    queue = f"memory-{random.randrange(10**6)}"
    fn = jobs.noop.using(queue=queue)
    before = ctx.client.info("memory")["used_memory"]
    bar = Progress(f"memory: filling {n:,} jobs", n)
    t = time.perf_counter()
    for i in range(0, n, FILL):
        fn.enqueue_many([((), {})] * min(FILL, n - i))
        bar.update(i + FILL)
    fill_s = time.perf_counter() - t
    after = ctx.client.info("memory")["used_memory"]
    bar.close(f"{(after - before) / n:,.0f} bytes/job")
    first = next(iter(ctx.client.lrange(ctx.keys(queue).lane("_"), 0, 0)), None)
    key = ctx.keys(queue).job(first) if first else None
    fields = stored.read_all_raw(ctx.client, [key])[0] if key else {}
    # The record as the queue stores it when one string (format 2), for the floors of a key a job and of buckets.
    raw = ctx.client.get(key) if key and ctx.client.type(key) == "string" else None
    deleted = _delete_queue(ctx, queue)
    ctx.results["memory"] = {"queued": n, "bytes_per_queued_job": (after - before) / n, "used_before": before,
                             "used_after": after, "fill_per_s": n / fill_s, "deleted_keys": deleted}
    if fields:
        keys = [ctx.keys(queue).job(f"{queue[:2]}.{i:022d}") for i in range(ctx.n(RECORDS, RECORDS // 10))]
        ctx.results["memory"]["record_bytes"] = record.bytes_per_record(ctx, keys, fields, raw)


def _delete_queue(ctx: Ctx, queue: str) -> int:
    """UNLINK every key of one queue, 10,000 a call: they share one hash tag, so one slot."""
    client, gone, batch = ctx.client, 0, []
    for key in client.scan_iter(match=ctx.keys(queue).ns + "*", count=10_000):
        batch.append(key)
        if len(batch) >= 10_000:
            gone += client.unlink(*batch)
            batch = []
    return gone + (client.unlink(*batch) if batch else 0)
