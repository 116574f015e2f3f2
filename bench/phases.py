"""The benchmark's phases; each records its figures in ``ctx.results[<phase>]``."""

from __future__ import annotations

import os
import random
import signal
import statistics
import time
from datetime import UTC, datetime

from bench import jobs, record, wire
from bench.claims import claims
from bench.harness import (
    Ctx,
    HostWaits,
    Progress,
    RoundTrips,
    WorkerProc,
    command_usec,
    commandstats,
    completed,
    cpu_seconds,
    done_scores,
    pct,
    reset_stats,
    results,
    script_usec,
    server_cpu,
    tree_cpu,
    wait_completed,
)
from bench.memory import memory
from emq.core import stored


def _queue(name: str) -> str:
    return f"{name}-{random.randrange(10**6)}"


def enqueue(ctx: Ctx) -> None:
    """1. 20,000 no-op jobs one by one from one process, and in bulk, each beside the wire's limit.

    Three rounds, each of: a bare redis-py EVALSHA loop and emq's one-by-one enqueue, in
    alternating blocks of BLOCK calls; a pipelined EVALSHA loop and emq's bulk enqueue, in
    alternating blocks too (``_bulk_beside_limit``, bench/wire.py). Rates are medians over the
    rounds; each ratio is the median of the rounds' ratios, so both sides of it saw the same load.
    """
    n = ctx.n(20_000, 2_000)
    rounds = [_enqueue_round(ctx, n, f"round {i + 1}/3") for i in range(3)]
    out: dict = {"n": n, "rounds": rounds}
    for key in ("one_by_one_per_s", "bulk_per_s", "raw_evalsha_per_s", "pipelined_wall_per_s",
                "pipelined_limit_per_s", "one_by_one_vs_raw", "bulk_vs_pipelined"):
        out[key] = statistics.median(r[key] for r in rounds)
    out["bulk_client_usec_per_job"] = statistics.median(r["bulk_client_usec_per_job"] for r in rounds)
    if ctx.private:
        for key in ("bulk_server_usec_per_job", "bulk_server_cpu_usec_per_job", "pipelined_usec_per_call",
                    "pipelined_cpu_usec_per_call", "hash_floor_cpu_usec_per_job", "hash_floor_vs_pipelined",
                    "packed_floor_cpu_usec_per_job", "packed_floor_vs_pipelined"):
            out[key] = statistics.median(r[key] for r in rounds)
    out["runs_one_by_one"] = [r["one_by_one_per_s"] for r in rounds]
    out["runs_bulk"] = [r["bulk_per_s"] for r in rounds]
    ctx.results["enqueue"] = out


BLOCK = 500  # calls in a block of the one-by-one enqueue and the bare loop it alternates with


def _enqueue_round(ctx: Ctx, n: int, label: str) -> dict:
    fn = jobs.noop.using(queue=_queue("enq1"))
    bar = Progress(f"enqueue one by one, {label}", n)
    sha, key = wire.trivial(ctx)
    raw_s = single_s = 0.0
    for start in range(0, n, BLOCK):  # bare calls and enqueues alternate: both see the same load
        k = min(BLOCK, n - start)
        raw_s += wire.raw_block(ctx, sha, key, k)
        t = time.perf_counter()
        for _ in range(k):
            fn.enqueue()
        single_s += time.perf_counter() - t
        bar.update(start + k)
    raw, single = n / raw_s, n / single_s
    bar.close(f"{single:,.0f}/s (bare EVALSHA loop {raw:,.0f}/s)")
    out = {"one_by_one_per_s": single, "raw_evalsha_per_s": raw, "one_by_one_vs_raw": single / raw}
    out.update(_bulk_beside_limit(ctx, n))
    return out


BULK_BLOCKS = 4  # blocks of bulk enqueue, each after a block of the pipelined loop: both see the same load


def _bulk_beside_limit(ctx: Ctx, n: int) -> dict:
    """Bulk enqueue of n jobs in BULK_BLOCKS calls, alternating with blocks of the pipelined loop
    (10 calls a job), both on one connection with two batches of 1,000 on the wire (bench/wire.py).

    The ratio is the bulk's wall rate over the loop's server-CPU bound. Beside it, per job of the
    bulk: the server's CPU (INFO cpu) and its time in the mint script (commandstats), the client's
    CPU (this process: checks, encoding, packing, references), and per call of the loop the server's
    CPU: what a job costs the server against what an empty script call does.
    """
    fn = jobs.noop.using(queue=_queue("enqbulk"))
    first = fn.enqueue_many([((), {})])[0]  # the plan and the script's load, outside the count
    fields = stored.read_all_raw(ctx.client, [ctx.keys(fn.queue).job(first.id)])[0]  # a job as the bulk mint writes it
    k = n // BULK_BLOCKS
    calls = [((), {})] * k
    pipe = {"calls": 0, "wall_s": 0.0, "server_cpu_s": 0.0, "script_usec": 0}
    bulk = {"wall_s": 0.0, "client_s": 0.0, "server_cpu_s": 0.0, "script_usec": 0}
    floor = {"calls": 0, "server_cpu_s": 0.0}
    packed = {"calls": 0, "server_cpu_s": 0.0}
    for _ in range(BULK_BLOCKS):
        for key, value in wire.pipelined(ctx, 10 * k).items():
            if key in pipe:
                pipe[key] += value
        if ctx.private:
            reset_stats(ctx)
            cpu0 = server_cpu(ctx)
        c, t = time.process_time(), time.perf_counter()
        fn.enqueue_many(calls)
        bulk["wall_s"] += time.perf_counter() - t
        bulk["client_s"] += time.process_time() - c
        if ctx.private:
            bulk["server_cpu_s"] += server_cpu(ctx) - cpu0
            bulk["script_usec"] += script_usec(ctx)
            for key, value in wire.hash_floor(ctx, fields, k).items():
                floor[key] += value
            for key, value in wire.packed_floor(ctx, fields, k).items():
                packed[key] += value
    jobs_n = k * BULK_BLOCKS
    many, wall = jobs_n / bulk["wall_s"], pipe["calls"] / pipe["wall_s"]
    limit = pipe["calls"] / pipe["server_cpu_s"] if ctx.private else wall
    out = {"bulk_per_s": many, "pipelined_wall_per_s": wall, "pipelined_limit_per_s": limit,
           "bulk_vs_pipelined": many / limit, "bulk_client_usec_per_job": bulk["client_s"] * 1e6 / jobs_n}
    if ctx.private:
        out["bulk_server_usec_per_job"] = bulk["script_usec"] / jobs_n
        out["bulk_server_cpu_usec_per_job"] = bulk["server_cpu_s"] * 1e6 / jobs_n
        out["pipelined_usec_per_call"] = pipe["script_usec"] / pipe["calls"]
        out["pipelined_cpu_usec_per_call"] = pipe["server_cpu_s"] * 1e6 / pipe["calls"]
        out["hash_floor_cpu_usec_per_job"] = floor["server_cpu_s"] * 1e6 / floor["calls"]
        out["hash_floor_vs_pipelined"] = floor["calls"] / floor["server_cpu_s"] / limit
        out["packed_floor_cpu_usec_per_job"] = packed["server_cpu_s"] * 1e6 / packed["calls"]
        out["packed_floor_vs_pipelined"] = packed["calls"] / packed["server_cpu_s"] / limit
    return out


DRAIN_CONCURRENCY = 50  # threads per worker process in drain and scale: BullMQ's setting in the issue
DRAINS = (("p1", 1, DRAIN_CONCURRENCY), ("p2", 2, DRAIN_CONCURRENCY), ("p3", 3, DRAIN_CONCURRENCY), ("p1c10", 1, 10),
          ("p1q", 1, DRAIN_CONCURRENCY))
# "p1q": the p1 drain without the worker's log line per completed job (EMQ_LOG_COMPLETED off), which
# is a third of its client CPU per job; BullMQ's worker writes no line per job.
QUIET = {"p1q": {"EMQ_LOG_COMPLETED": "false"}}


def _drain_once(ctx: Ctx, n: int, processes: int, label: str, concurrency: int = DRAIN_CONCURRENCY,
                env: dict | None = None) -> dict:
    """One drain by a fresh worker; rates, and CPU per job on each side of the wire.

    ``client_cpu_usec_per_job``: user + system CPU of the worker's processes (the supervisor and
    every child) from its "up" line to its last completion, per job. Valkey is a process of its
    own, so none of the server's time is in it; it is the Python side's whole cost per job
    (claim, run, finish, renewals, its Pump). On a private server, ``server_cpu_usec_per_job`` is
    Valkey's CPU over the drain (INFO cpu) and ``server_script_usec_per_job`` its time inside
    scripts (INFO commandstats, EVALSHA and FCALL usec: claim, finish, the Pump's ticks).
    """
    queue = _queue("drain")
    jobs.noop.using(queue=queue).enqueue_many([((), {})] * n)
    args = ["--burst", "--concurrency", str(concurrency)]
    if processes > 1:
        args += ["--processes", str(processes)]
    if ctx.private:
        reset_stats(ctx)
        cpu0 = server_cpu(ctx)
    w = WorkerProc(ctx, queue, *args, env=env)
    wait_completed(ctx, queue, n, label, w)
    client_cpu = w.cpu_done - w.cpu_up
    out = {"client_cpu_usec_per_job": client_cpu * 1e6 / n}
    if ctx.private:
        out["server_cpu_usec_per_job"] = (server_cpu(ctx) - cpu0) * 1e6 / n
        out["server_script_usec_per_job"] = script_usec(ctx) / n
    if (code := w.stop(60, burst=True)) != 0:
        raise RuntimeError(f"{label}: worker exited {code}:\n" + "\n".join(w.lines))
    last = max(done_scores(ctx, queue)) / 1000
    out.update(per_s=n / (last - w.up), per_s_from_spawn=n / (last - w.spawned))
    out["wall_usec_per_job"] = 1e6 / out["per_s"]
    return out


def drain(ctx: Ctx) -> None:
    """2. 20,000 queued no-op jobs drained by one emq_worker process, two, three (median of 3 each).

    Beside each rate: the worker's CPU per job and the server's (see ``_drain_once``), which
    say which side a drain waits on once more processes stop helping.
    """
    n = ctx.n(20_000, 3_000)
    out = {"n": n, "concurrency": DRAIN_CONCURRENCY}
    for key, processes, concurrency in DRAINS:
        label = f"drain, {processes} process(es) x {concurrency}"
        label += ", no line a job" if key in QUIET else ""
        runs = [_drain_once(ctx, n, processes, f"{label}, run {i + 1}/3", concurrency, QUIET.get(key))
                for i in range(3)]
        for figure in runs[0]:
            out[f"{key}_{figure}"] = statistics.median(r[figure] for r in runs)
        out[f"{key}_runs"] = runs
    ctx.results["drain"] = out


def cost(ctx: Ctx) -> None:
    """3. Server commands (inside scripts too) and client round trips per job: mint, claim, finish."""
    if not ctx.private:
        ctx.results["cost"] = {"skipped": "INFO commandstats needs a private server"}
        return
    n = ctx.n(20_000, 2_000)
    queue = _queue("cost")
    fn = jobs.noop.using(queue=queue)
    first = fn.enqueue()  # registers the queue (one SADD) outside the count
    fields = stored.read_all_raw(ctx.client, [ctx.keys(queue).job(first.id)])[0]
    reset_stats(ctx)
    trips = RoundTrips()
    for _ in range(n):
        fn.enqueue()
    mint_trips, mint, mint_usec = trips.count, commandstats(ctx), script_usec(ctx)
    reset_stats(ctx)
    trips.count = 0
    _burst(queue)
    drain_trips, drained, drain_usec, inner = trips.count, commandstats(ctx), script_usec(ctx), command_usec(ctx)
    waits = _durable_waits(ctx, queue, n // 4, trips)
    trips.close()
    n += 1
    drained.pop("config|resetstat", None)
    ctx.results["cost"] = {
        "n": n,
        "mint_cmds_per_job": sum(mint.values()) / (n - 1),
        "drain_cmds_per_job": sum(drained.values()) / n,
        "mint_round_trips_per_job": mint_trips / (n - 1),
        "drain_round_trips_per_job": drain_trips / n,
        "mint_server_usec_per_job": mint_usec / (n - 1),
        "drain_server_usec_per_job": drain_usec / n,
        "drain_command_usec_per_job": inner / n,  # the scripts' commands; the rest is their own Lua
        "mint_by_command": mint,
        "drain_by_command": dict(sorted(drained.items(), key=lambda kv: -kv[1])),
        "how": "in-process Worker (burst, no Pump, concurrency 10): the code emq_worker runs",
        "record_usec_per_job": record.claim_finish(ctx, fields, n),
        **waits,
    }


def _burst(queue: str) -> None:
    """Drain queue with an in-process Worker (burst, no Pump, concurrency 10): the code emq_worker runs. Its
    signal handlers are put back after (the bench's own stop on SIGINT)."""
    from emq.runtime.worker import Worker

    handlers = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)}
    Worker([queue], concurrency=10, burst=True, pump=False).run()
    for sig, handler in handlers.items():
        signal.signal(sig, handler)


def _durable_waits(ctx: Ctx, queue: str, n: int, trips: RoundTrips) -> dict:
    """n durable jobs whose first run ends at a wait for a signal, drained as the cost phase's: round trips and
    server µs a job (claim, run, finish; the run's journal comes with its claim)."""
    jobs.waits.using(queue=queue).enqueue_many([((), {})] * n)
    reset_stats(ctx)
    trips.count = 0
    _burst(queue)
    return {"durable_wait_round_trips_per_job": trips.count / n,
            "durable_wait_server_usec_per_job": script_usec(ctx) / n}


def idle(ctx: Ctx) -> None:
    """4. A parked worker (with its Pump): commands per second and CPU over 20 s.

    20 s, not 10: the leading Pump ticks every EMQ_PUMP_PARK (20 s) and the heartbeat every
    15 s, so a 10 s window counts either 0 or 1 tick depending on its phase; 20 s is the average.
    """
    from emq import conf

    seconds = ctx.n(int(conf.get("EMQ_PUMP_PARK")), 3)
    queue = _queue("idle")
    w = WorkerProc(ctx, queue, "--concurrency", "10")
    w.wait_up()
    time.sleep(2.0)  # let it park: startup traffic (connections, first tick) is not idle traffic
    cpu0 = tree_cpu(w.proc.pid)  # the supervisor and its worker process
    if ctx.private:
        reset_stats(ctx)
    bar = Progress(f"idle worker, {seconds} s", seconds * 10)
    for i in range(seconds * 10):
        time.sleep(0.1)
        bar.update(i + 1)
    by_command = commandstats(ctx) if ctx.private else {}
    by_command["info"] = by_command.get("info", 1) - 1  # not the INFO that read them,
    by_command.pop("config|resetstat", None)  # nor the reset that zeroed them
    cmds = sum(by_command.values()) if ctx.private else None
    cpu = tree_cpu(w.proc.pid) - cpu0
    bar.close()
    w.stop()
    ctx.results["idle"] = {"seconds": seconds, "cmds_per_s": None if cmds is None else cmds / seconds,
                           "cpu_percent": 100 * cpu / seconds, "by_command": by_command}


def latency(ctx: Ctx) -> None:
    """5. Enqueue -> start at 100 jobs/s to an idle worker: p50 / p99 (ms) over 2 runs pooled."""
    ctx.results["latency"] = _pooled([_latency_run(ctx, ctx.n(1_000, 200), f"run {i + 1}/2") for i in range(2)])


def _pooled(runs: list[dict]) -> dict:
    """Percentiles over every sample of the runs (no picking the better run); each run kept too."""
    ms = [x for r in runs for x in r.pop("ms")]
    waited = {who: sum(r["host"].get(who, {}).get("runq_wait_ms", 0.0) for r in runs) / len(ms)
              for who in runs[0]["host"]}
    return {"n": len(ms), "p50_ms": pct(ms, 50), "p99_ms": pct(ms, 99), "max_ms": max(ms), "runs": runs,
            "runq_wait_ms_per_job": waited, "how": "2 runs pooled (shared machine)"}


def _latency_run(ctx: Ctx, n: int, label: str) -> dict:
    queue = _queue("latency")
    w = WorkerProc(ctx, queue, "--concurrency", "10")
    w.wait_up()
    time.sleep(0.5)
    fn = jobs.stamp.using(queue=queue)
    bar = Progress(f"latency at 100 jobs/s, {label}", n)
    ids, enqueued, returned, start = [], [], [], time.perf_counter()
    waits = HostWaits(ctx, w)
    for i in range(n):
        time.sleep(max(0.0, start + i / 100 - time.perf_counter()))
        enqueued.append(time.time())
        ids.append(fn.enqueue(enqueued[-1]).id)
        returned.append(time.time())
        bar.update(i + 1)
    bar.close()
    wait_completed(ctx, queue, n, "latency: last jobs", w, timeout=30)
    host = waits.done()
    w.stop()
    ms = [r * 1000 for r in results(ctx, queue, ids)]
    return _run_result(ctx, queue, ids, enqueued, ms, host, returned)


def _run_result(ctx: Ctx, queue: str, ids: list[str], t0s: list[float], ms: list[float], host: dict,
                returned: list[float] | None = None) -> dict:
    """One run's figures, its samples (pooled by _pooled), where its slowest 1% went, and how long the
    run's processes waited for a core (``HostWaits``: the host's share of the stalls)."""
    return {"n": len(ms), "p50_ms": pct(ms, 50), "p99_ms": pct(ms, 99), "max_ms": max(ms), "ms": ms,
            "slowest": _steps(ctx, queue, ids, t0s, ms, returned), "host": host}


def _steps(ctx: Ctx, queue: str, ids: list[str], t0s: list[float], ms: list[float],
           returned: list[float] | None = None) -> list[dict]:
    """Where the slowest 1% spent their time: t0 (enqueue or due) -> minted -> claimed -> started.

    Server times (minted, claimed) are whole ms; with ``returned`` (when each enqueue call came back,
    this process's clock) ``enqueue_call`` is the producer's whole call to the microsecond.
    """
    slow = sorted(range(len(ids)), key=lambda i: -ms[i])[: max(2, len(ids) // 100)]
    rows = stored.read_raw(ctx.client, [ctx.keys(queue).job(ids[i]) for i in slow], ("created", "claimed"))
    steps = []
    for i, (created, claimed) in zip(slow, rows, strict=True):
        t0 = t0s[i] * 1000
        steps.append({
            "total": round(ms[i], 2), "t0_to_mint": round(int(created) - t0, 1),
            "to_claim": round(int(claimed) - max(int(created), t0), 1),
            "claim_to_start": round(t0 + ms[i] - int(claimed), 1),
        })
        if returned is not None:
            steps[-1]["enqueue_call"] = round((returned[i] - t0s[i]) * 1000, 2)
    return steps


def delayed(ctx: Ctx) -> None:
    """6. 200 jobs due 1-3 s ahead: how late each starts, p50 / p99 (ms) over 2 runs pooled."""
    ctx.results["delayed"] = _pooled([_delayed_run(ctx, 200, f"run {i + 1}/2") for i in range(2)])


def _delayed_run(ctx: Ctx, n: int, label: str) -> dict:
    queue = _queue("delayed")
    w = WorkerProc(ctx, queue, "--concurrency", "10")
    w.wait_up()
    time.sleep(0.5)
    fn = jobs.stamp.using(queue=queue)
    ids, dues = [], []
    waits = HostWaits(ctx, w)
    for _ in range(n):
        dues.append(round(time.time() + random.uniform(1, 3), 3))
        ids.append(fn.enqueue_at(datetime.fromtimestamp(dues[-1], tz=UTC), dues[-1]).id)
    wait_completed(ctx, queue, n, f"delayed jobs due in 1-3 s, {label}", w, timeout=30)
    host = waits.done()
    w.stop()
    ms = [r * 1000 for r in results(ctx, queue, ids)]
    return _run_result(ctx, queue, ids, dues, ms, host)


def fairness(ctx: Ctx) -> None:
    """7. 100 groups of skewed sizes, biggest enqueued first: Jain's index, last job of the smallest."""
    top = ctx.n(2_000, 400)
    sizes = [max(1, top // (g + 1)) for g in range(100)]  # Zipf-like: top, top/2, ..., top/100
    queue = _queue("fair")
    ids_by_group: list[list[str]] = []
    for g, size in enumerate(sizes):
        refs = jobs.mark.using(queue=queue, group=f"g{g}").enqueue_many([((), {})] * size)
        ids_by_group.append([r.id for r in refs])
    total = sum(sizes)
    w = WorkerProc(ctx, queue, "--burst", "--concurrency", "10")
    wait_completed(ctx, queue, total, "fairness: 100 groups", w)
    w.stop()
    started = [(t, g) for g, ids in enumerate(ids_by_group) for t in results(ctx, queue, ids)]
    order = [g for _, g in sorted(started)]
    # Service while every group still has work: the first (smallest size x groups) starts.
    window = order[: min(sizes) * len(sizes)]
    served = [window.count(g) for g in range(len(sizes))]
    jain = sum(served) ** 2 / (len(served) * sum(x * x for x in served))
    smallest = min(range(len(sizes)), key=lambda g: sizes[g])
    last_small = max(i for i, g in enumerate(order) if g == smallest) + 1
    ctx.results["fairness"] = {
        "jobs": total, "groups": len(sizes), "sizes": [sizes[0], sizes[-1]], "jain": jain,
        "window": len(window), "last_of_smallest": last_small, "ideal_last_of_smallest": min(sizes) * len(sizes),
    }


def scale(ctx: Ctx) -> None:
    """8. Drain rate with 1,000 vs 1,000,000 queued, and server bytes per queued job.

    The machine is shared, so the two cases alternate in 10 rounds and each reports the median
    of its rounds: a round of the small case drains 1,000 freshly queued jobs; a round of the big
    case lets its worker (paused with SIGSTOP between rounds) run ~1,000 jobs off the backlog.
    Each round's rate is taken over its middle 900 completions (finish times on the server).
    """
    # On someone else's server (--url) the backlog stays at 100,000 jobs (~34 MB, not ~340 MB).
    big = ctx.n(1_000_000, 100_000) if ctx.private else 100_000
    small_q, big_q = _queue("scale-small"), _queue("scale-big")
    used0 = ctx.client.info("memory")["used_memory"]
    fn = jobs.noop.using(queue=big_q)
    bar = Progress(f"scale: filling {big:,} jobs", big)
    for i in range(0, big, 10_000):
        fn.enqueue_many([((), {})] * 10_000)
        bar.update(i + 10_000)
    bar.close()
    per_job = (ctx.client.info("memory")["used_memory"] - used0) / big
    c = str(DRAIN_CONCURRENCY)
    # In the command's own process (--no-supervise): SIGSTOP must pause the worker, and its CPU is its pid's.
    ws, wb = (WorkerProc(ctx, q, "--concurrency", c, "--no-supervise") for q in (small_q, big_q))
    wb.wait_up()
    ws.wait_up()
    os.kill(wb.proc.pid, signal.SIGSTOP)
    cases = {"small": _Case(ctx, small_q, ws), "big": _Case(ctx, big_q, wb)}
    bar = Progress("scale: 10 rounds each", 10)
    for r in range(10):
        cases["small"].round(lambda: jobs.noop.using(queue=small_q).enqueue_many([((), {})] * 1_000))
        cases["big"].round(lambda: os.kill(wb.proc.pid, signal.SIGCONT), lambda: os.kill(wb.proc.pid, signal.SIGSTOP))
        bar.update(r + 1)
    bar.close()
    os.kill(wb.proc.pid, signal.SIGCONT)
    ws.stop()
    wb.stop()
    out = {"small_queued": 1_000, "big_queued": big, "bytes_per_queued_job": per_job}
    for name, case in cases.items():
        out[f"{name}_per_s"] = statistics.median(case.rates)
        out[f"{name}_per_cpu_s"] = case.jobs / case.cpu
        out[f"{name}_rounds"] = case.rates
    out["ratio"] = out["big_per_s"] / out["small_per_s"]
    out["cpu_ratio"] = out["big_per_cpu_s"] / out["small_per_cpu_s"]
    out["cpu_counts"] = "the worker process's user+sys time over all its rounds (10 ms ticks)"
    ctx.results["scale"] = out


class _Case:
    """One side of the scale phase: its rounds' rates, and jobs per worker CPU second over all rounds."""

    def __init__(self, ctx: Ctx, queue: str, worker: WorkerProc) -> None:
        self.ctx, self.queue, self.worker = ctx, queue, worker
        self.rates: list[float] = []
        self.jobs, self.cpu = 0, 0.0

    def _cpu(self) -> float:
        # The worker's own CPU only: the server's would charge the small case for its enqueues.
        return cpu_seconds(self.worker.proc.pid)

    def round(self, go, halt=None) -> None:
        base, cpu = completed(self.ctx, self.queue), self._cpu()
        go()
        self.rates.append(_round(self.ctx, self.queue, base, 1_000))
        if halt:
            halt()
        time.sleep(0.05)  # let the last batch finish before the counters are read
        self.jobs += completed(self.ctx, self.queue) - base
        self.cpu += self._cpu() - cpu


def _round(ctx: Ctx, queue: str, base: int, n: int) -> float:
    """Wait for n more completions after base; the rate over the middle 900 (server finish times)."""
    deadline = time.monotonic() + 60
    while completed(ctx, queue) < base + n:
        if time.monotonic() > deadline:
            raise RuntimeError(f"scale: {queue} stalled at {completed(ctx, queue)}")
        time.sleep(0.005)
    scores = [s for _, s in ctx.client.zrange(ctx.keys(queue).done, base + 50, base + n - 51, withscores=True)]
    return _window_rate(scores)


def _window_rate(scores: list[float]) -> float:
    """Completions per second over a window of finish times (ms), first to last."""
    return (len(scores) - 1) / max((scores[-1] - scores[0]) / 1000, 0.001)


def admin(ctx: Ctx) -> None:
    """9. Render time of each dashboard page with 100,000 jobs queued (once the admin exists)."""
    try:
        from bench import admin_pages
    except ImportError:
        ctx.results["admin"] = {"skipped": "admin not built yet"}
        return
    n = ctx.n(100_000, 10_000)
    fn = jobs.noop.using(queue=_queue("admin"))
    bar = Progress(f"admin: filling {n:,} jobs", n)
    for i in range(0, n, 10_000):
        fn.enqueue_many([((), {})] * 10_000)
        bar.update(i + 10_000)
    bar.close()
    ctx.results["admin"] = {"queued": n, "pages_ms": admin_pages.measure(ctx.url)}


PHASES = [enqueue, drain, cost, idle, latency, delayed, fairness, admin, memory, claims, scale]
