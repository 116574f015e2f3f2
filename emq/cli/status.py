"""``manage.py emq status [--watch]``: every queue's counts, latency, throughput, workers and Pump,
and a warning for jobs of names no live worker knows (a rolling deploy not done yet)."""

from __future__ import annotations

import time
from typing import Any

from ..core import registry, topology, unknown
from ..core.engine import Snapshot, snapshots
from ..core.engine.observe import paused_lanes
from ..core.logical import partitions
from ..runtime.pump import lead_ttl_ms
from .known import unknown_queue
from .registry import IO, Arg, Options, Result, subcommand
from .render import age, show

STATE_COLUMNS = ("scheduled", "ready", "active", "completed", "dead", "cancelled", "waiting")


def queue_rows(names: list[str]) -> list[dict[str, Any]]:
    """One row per logical queue (its partitions summed), from one pipelined read (and one for paused lanes)."""
    physical = partitions(names)
    snaps = {s.queue: s for s in snapshots(physical, lead_ttl_ms())}
    paused = {q.name: lanes for q, lanes in zip(physical, paused_lanes(physical), strict=True)}
    workers = registry.workers()
    rows = [_row(name, [snaps[p] for p in topology.names(name)], workers, paused) for name in names]
    held = unknown.unknown_names(names)
    for row in rows:
        row["unknown_jobs"] = [{"name": u.name, "jobs": u.jobs, "waiting_ms": u.waiting_ms}
                               for u in held if u.queue == row["queue"]]
    return rows


def _row(name: str, parts: list[Snapshot], workers: list[registry.WorkerEntry],
         paused: dict[str, tuple[list[str], int]]) -> dict[str, Any]:
    own = {p.queue for p in parts}
    row: dict[str, Any] = {"queue": name}
    for state in STATE_COLUMNS:
        row[state] = sum(getattr(p.counts, state) for p in parts)
    oldest = [p.oldest_ready_ms for p in parts if p.oldest_ready_ms is not None]
    row["oldest_ready_ms"] = max(oldest) if oldest else None
    row["done_per_min"] = sum(p.last_minute[0] for p in parts)
    row["failed_per_min"] = sum(p.last_minute[1] for p in parts)
    row["workers"] = sum(1 for w in workers if own & set(w.info.get("queues", [])))
    ticks = [p.last_tick_ms for p in parts]
    row["pump_tick_ms"] = None if None in ticks else max(ticks)
    row["capped_groups"] = sum(max(p.capped_groups - paused[p.queue][1], 0) for p in parts)  # paused: off the ring too
    row["paused"] = all(p.counts.paused for p in parts)
    row["paused_groups"] = sorted({g for p in parts for g in paused[p.queue][0]})
    return row


def _text(row: dict[str, Any]) -> dict[str, Any]:
    """A row for the table: ages in words, the Pump as its last tick."""
    out = {k: row[k] for k in ("queue", *STATE_COLUMNS)}
    out["oldest_ready"] = age(row["oldest_ready_ms"])
    out["done/min"], out["failed/min"], out["workers"] = row["done_per_min"], row["failed_per_min"], row["workers"]
    out["pump"] = "none" if row["pump_tick_ms"] is None else f"ticked {age(row['pump_tick_ms'])} ago"
    out["capped_groups"] = row["capped_groups"]
    groups = row["paused_groups"]
    shown = ", ".join(groups[:3]) + (f" +{len(groups) - 3}" if len(groups) > 3 else "")
    out["paused"] = "queue" if row["paused"] else shown or "—"
    return out


@subcommand(
    "status", "Every queue: jobs by state, the oldest ready job's age, completed and failed in the last "
    "minute, workers, the Pump's last tick, groups held at their cap, and what is paused; then a warning "
    "for jobs of names no live worker knows.",
    Arg("--queues", default=None, help="comma-separated queues (default: every registered queue)"),
    Arg("--watch", nargs="?", type=float, const=2.0, default=None, metavar="SECONDS",
        help="show it again every SECONDS (default 2) until Ctrl-C"),
)
def status(opts: Options, io: IO) -> Result:
    names = [q.strip() for q in opts["queues"].split(",") if q.strip()] if opts["queues"] else None
    refused = next((why for name in names or () if (why := unknown_queue(name))), None)
    if refused:
        return Result(None, ok=False, failure=refused)
    if opts["watch"] is None:
        return _once(names)
    try:
        while True:
            result = _once(names)
            if not opts["json"] and io.out.isatty():
                io.out.write("\x1b[H\x1b[2J")
            show(result, io, opts["json"])
            io.out.flush()
            time.sleep(max(opts["watch"], 0.1))
    except KeyboardInterrupt:
        return Result(None, shown=True)


def warnings(rows: list[dict[str, Any]]) -> list[str]:
    """A line per queue holding jobs of names no live worker of it knows: which names, how many, how long."""
    lines = []
    for row in rows:
        if row["unknown_jobs"]:
            names = ", ".join(f"{u['name']} ({u['jobs']} {'job' if u['jobs'] == 1 else 'jobs'}, first "
                              f"{age(u['waiting_ms'])} ago)" for u in row["unknown_jobs"])
            lines.append(f"warning: queue {row['queue']} holds jobs for names no live worker knows: {names}")
    return lines


def _once(names: list[str] | None) -> Result:
    rows = queue_rows(names or sorted(registry.known_queues()))
    return Result(rows, [_text(r) for r in rows], warnings(rows))
