"""``make bench``: emq's numbers against the peers', on a private embedded Valkey by default.

    python bench/run.py                 # every phase, ~5 minutes, private Valkey in a temp folder
    python bench/run.py --quick         # a smoke run with small counts
    python bench/run.py --url redis://127.0.0.1:6379/15 [--only drain,latency]
    python bench/run.py --url redis://127.0.0.1:7777/0 --private   # a server of your own

Progress goes to stderr; one table goes to stdout; every figure goes to bench/results.json.
Against --url everything lives under a fresh key prefix that is deleted after; INFO-based
figures (commands per job, idle commands, memory) are only taken on a private server.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "echd_project.settings")

# The peers, as the issue measured them on this machine's Redis 7.0 (no-op jobs, median of 3).
BULLMQ = {"enq1": 3305, "bulk": 14084, "drain1": 7676, "drain2": 7249, "cmds": 33, "idle": 1.6,
          "lat": (1.9, 5.5), "delayed": (48, 95)}
BEST_PY = {"enq1": ("Dramatiq", 2385), "bulk": ("BullMQ-py", 10870), "drain1": ("Dramatiq", 1690),
           "drain2": ("Dramatiq", 2870), "cmds": ("Huey", 4), "idle": ("BullMQ-py", 0.3),
           "lat": ("Huey", (1.3, 2.9)), "delayed": ("Celery", (1.7, 4.1))}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--url", help="benchmark this server instead of a private embedded Valkey")
    ap.add_argument("--private", action="store_true",
                    help="the --url server is yours alone: take the INFO figures (commands, memory) there too")
    ap.add_argument("--quick", action="store_true", help="small counts: a smoke run of every phase")
    ap.add_argument("--only", help="comma-separated phases, e.g. drain,latency")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results.json"))
    opts = ap.parse_args()

    import django

    django.setup()
    from bench import phases
    from bench.harness import Ctx

    folder = None
    if opts.url:
        url = opts.url
    else:
        from emq import embedded

        folder = Path(tempfile.mkdtemp(prefix="emq-bench-valkey-"))
        url = embedded.start(folder, persist=False)
    try:
        ctx = Ctx(url=url, private=folder is not None or opts.private, server="", quick=opts.quick)
        _configure(ctx, embedded=folder is not None)
        wanted = set(opts.only.split(",")) if opts.only else None
        started = time.monotonic()
        for phase in phases.PHASES:
            if wanted is None or phase.__name__ in wanted:
                sys.stderr.write(f"{phase.__name__}: {phase.__doc__.splitlines()[0]}\n")
                phase(ctx)
        ctx.results["meta"] = _meta(ctx, time.monotonic() - started)
        Path(opts.out).write_text(json.dumps(ctx.results, indent=2, default=str) + "\n")
        print(table(ctx))
        sys.stderr.write(f"figures written to {opts.out}\n")
    finally:
        _cleanup(folder)
    return 0


def _configure(ctx, embedded: bool) -> None:
    from django.conf import settings

    from emq import connection

    settings.EMQ_URL, settings.EMQ_PREFIX = ctx.url, ctx.prefix
    connection.reset()
    info = ctx.client.info("server")
    name = "Valkey" if "valkey_version" in info else "Redis"
    version = info.get("valkey_version") or info.get("redis_version")
    where = "private embedded" if embedded else ctx.url + (", private" if ctx.private else "")
    ctx.server = f"{name} {version} ({where})"


def _cleanup(folder: Path | None) -> None:
    from emq import embedded

    if folder is not None:
        embedded.stop(folder)
        shutil.rmtree(folder, ignore_errors=True)
        return
    from django.conf import settings

    from emq.connection import get_client
    from emq.testing import delete_prefix

    delete_prefix(get_client(), settings.EMQ_PREFIX)


def _meta(ctx, seconds: float) -> dict:
    return {"server": ctx.server, "quick": ctx.quick, "seconds": round(seconds, 1), "python": platform.python_version(),
            "load_average": os.getloadavg(), "cpus": os.cpu_count(), "when": time.strftime("%Y-%m-%d %H:%M:%S UTC",
                                                                                            time.gmtime())}


def table(ctx) -> str:
    """One markdown table: each figure, its goal, BullMQ's and the best Python peer's, met or not."""
    r = ctx.results
    rows: list[tuple[str, str, str, str, str, str]] = []

    def row(label, value, goal, ok, bull="", peer=""):
        verdict = "" if ok is None else ("met" if ok else "MISSED")
        rows.append((label, value, goal, bull, peer, verdict))

    if e := r.get("enqueue"):
        row("enqueue 1-by-1 /s", f"{e['one_by_one_per_s']:,.0f}", f">= {BULLMQ['enq1']:,}",
            e["one_by_one_per_s"] >= BULLMQ["enq1"], f"{BULLMQ['enq1']:,}", _peer("enq1"))
        row("enqueue bulk /s", f"{e['bulk_per_s']:,.0f}", f">= {2 * BULLMQ['bulk']:,}",
            e["bulk_per_s"] >= 2 * BULLMQ["bulk"], f"{BULLMQ['bulk']:,}", _peer("bulk"))
    if d := r.get("drain"):
        goal = max(1.3 * BULLMQ["drain1"], 3 * BEST_PY["drain1"][1])
        c = d["concurrency"]
        row(f"drain 1 process x {c} /s (from worker up)", f"{d['p1_per_s']:,.0f}", f">= {goal:,.0f}",
            d["p1_per_s"] >= goal, f"{BULLMQ['drain1']:,}", _peer("drain1"))
        row("  same, from process spawn", f"{d['p1_per_s_from_spawn']:,.0f}", f">= {goal:,.0f}",
            d["p1_per_s_from_spawn"] >= goal)
        row("  1 process x 10 (emq's default), from up", f"{d['p1c10_per_s']:,.0f}", f">= {goal:,.0f}",
            d["p1c10_per_s"] >= goal)
        row(f"drain 2 processes x {c} /s (from worker up)", f"{d['p2_per_s']:,.0f}", "", None,
            f"{BULLMQ['drain2']:,}", _peer("drain2"))
        row("  same, from process spawn", f"{d['p2_per_s_from_spawn']:,.0f}", "", None)
    if (c := r.get("cost")) and "skipped" not in c:
        total = c["mint_cmds_per_job"] + c["drain_cmds_per_job"]
        row("cmds/job mint + (claim + finish)", f"{c['mint_cmds_per_job']:.1f} + {c['drain_cmds_per_job']:.1f}",
            "<= 15", total <= 15, "9 + 24", "Huey 1 + 3")
        row("round trips/job mint + drain", f"{c['mint_round_trips_per_job']:.2f} + "
            f"{c['drain_round_trips_per_job']:.3f}", "", None)
        row("server µs/job in scripts, mint + drain", f"{c['mint_server_usec_per_job']:.1f} + "
            f"{c['drain_server_usec_per_job']:.1f}", "", None)
    elif c:
        row("cmds/job", "n/a: " + c["skipped"], "<= 15", None)
    if i := r.get("idle"):
        cmds = "n/a (shared server)" if i["cmds_per_s"] is None else f"{i['cmds_per_s']:.2f}"
        row(f"idle cmds/s (1 worker + its Pump, {i['seconds']} s)", cmds, "<= 1", None if i["cmds_per_s"] is None
            else i["cmds_per_s"] <= 1, f"{BULLMQ['idle']}", _peer("idle"))
        row("idle worker CPU %", f"{i['cpu_percent']:.2f}", "", None)
    if la := r.get("latency"):
        row("latency p50 / p99 ms", f"{la['p50_ms']:.2f} / {la['p99_ms']:.2f}", "<= 1.5 / 4",
            la["p50_ms"] <= 1.5 and la["p99_ms"] <= 4, "1.9 / 5.5", "Huey 1.3 / 2.9")
    if de := r.get("delayed"):
        row("delayed lateness p50 / p99 ms", f"{de['p50_ms']:.2f} / {de['p99_ms']:.2f}", "p99 <= 5",
            de["p99_ms"] <= 5, "48 / 95", "Celery 1.7 / 4.1")
    if f := r.get("fairness"):
        row("fairness: Jain's index (100 groups)", f"{f['jain']:.3f}", "", None)
        row("  last job of smallest group at", f"{f['last_of_smallest']:,} of {f['jobs']:,}",
            f"ideal {f['ideal_last_of_smallest']:,}", None)
    if s := r.get("scale"):
        row(f"scale: drain /s at 1,000 vs {s['big_queued']:,} queued", f"{s['small_per_s']:,.0f} vs "
            f"{s['big_per_s']:,.0f} ({s['ratio']:.2f}x)", ">= 0.9x", s["ratio"] >= 0.9)
        row("  same, jobs per worker CPU second", f"{s['small_per_cpu_s']:,.0f} vs {s['big_per_cpu_s']:,.0f} "
            f"({s['cpu_ratio']:.2f}x)", ">= 0.9x", s["cpu_ratio"] >= 0.9)
        row("  server bytes per queued job", f"{s['bytes_per_queued_job']:,.0f}", "", None)
    if a := r.get("admin"):
        if "skipped" in a:
            row("admin page render", a["skipped"], "", None)
        else:
            for page, ms in a["pages_ms"].items():
                row(f"admin {page} ms ({a['queued']:,} queued)", f"{ms:.1f}", "", None)
    head = ("figure", "emq", "goal", "BullMQ 6.7", "best Python peer", "")
    lines = [f"emq benchmark on {ctx.server}; load average {os.getloadavg()[0]:.2f}"
             + (" (QUICK: small counts)" if ctx.quick else ""), "",
             "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(x) + " |" for x in rows]
    return "\n".join(lines)


def _peer(key: str) -> str:
    name, value = BEST_PY[key]
    if isinstance(value, tuple):
        return f"{name} {value[0]} / {value[1]}"
    return f"{name} {value:,}"


if __name__ == "__main__":
    sys.exit(main())
