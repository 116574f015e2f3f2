"""``manage.py emq jobs`` and ``show``: list a queue's jobs in one state, show one job whole.

A list reads at most SCAN_BUDGET entries of the state's set (filters by name or group cannot use
an index), a chunk per round trip; it never loads a whole set.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ..core import layout, registry
from ..core.connection import get_client, guard
from ..core.engine import Queue
from ..core.lanes import lane_range
from ..core.logical import LogicalQueue
from ..errors import JobNotFound
from .registry import IO, QUEUE, Arg, Options, Result, subcommand
from .render import age

SCAN_BUDGET = 10_000
CHUNK = 500
FIELDS = ("fn", "state", "group", "attempts", "max_attempts", "created", "due", "claimed", "finished", "error")
STATES = ["waiting", "scheduled", "ready", "active", "completed", "dead", "cancelled"]
# The set each state lives in, its order, and the time the list shows (ready: the lanes).
SETS = {"waiting": ("waiting", False, "created"), "scheduled": ("scheduled", False, "due"),
        "active": ("leases", False, "claimed"), "completed": ("done", True, "finished"),
        "dead": ("dead", True, "finished"), "cancelled": ("cancelled", True, "finished")}


def _ids(q: Queue, state: str, group: str | None, start: int) -> list[str]:
    """A chunk of the ids in one state from position start (ready: the lanes, in serving order)."""
    client = q.client
    if state != "ready":
        suffix, desc, _ = SETS[state]
        read = client.zrevrange if desc else client.zrange
        return read(q.keys.fixed(suffix), start, start + CHUNK - 1)
    if group:
        return lane_range(client, q.keys, group, start, start + CHUNK - 1)
    ids: list[str] = []
    for g in client.lrange(q.keys.ring, 0, 99) if start == 0 else []:
        ids += lane_range(client, q.keys, g, 0, CHUNK - 1)
    return ids


def find(queue: str, state: str, group: str | None, name: str | None, limit: int) -> list[dict[str, Any]]:
    """Up to limit jobs of a queue in one state, filtered by group and (a substring of) name."""
    rows: list[dict[str, Any]] = []
    with guard():
        now = _now()
        for q in LogicalQueue(queue).partitions:
            start = 0
            while len(rows) < limit and start < SCAN_BUDGET:
                ids = _ids(q, state, group, start)
                pipe = q.client.pipeline(transaction=False)
                for job_id in ids:
                    pipe.hmget(q.keys.job(job_id), FIELDS)
                for job_id, values in zip(ids, pipe.execute() if ids else [], strict=True):
                    f = layout.filled(dict(zip(FIELDS, values, strict=True)), FIELDS)
                    if f["fn"] and (not group or f["group"] == group) and (not name or name in f["fn"]):
                        rows.append(_row(q.name, job_id, f, state, now))
                if len(ids) < CHUNK or (state == "ready" and not group):
                    break
                start += CHUNK
    return rows[:limit]


def _now() -> int:
    sec, usec = get_client().time()
    return int(sec) * 1000 + int(usec) // 1000


def _row(queue: str, job_id: str, f: dict[str, Any], state: str, now: int) -> dict[str, Any]:
    when = f[SETS[state][2]] if state in SETS else f["due"]
    return {"id": job_id, "name": f["fn"], "state": f["state"], "group": f["group"],
            "attempts": int(f["attempts"] or 0), "queue": queue, "age": None if when is None else now - int(when),
            "error": (f["error"] or "").split("\n", 1)[0] or None}


@subcommand(
    "jobs", "List a queue's jobs in one state, newest finished first, the next due first.",
    Arg("queue"), Arg("--state", default="ready", choices=STATES),
    Arg("--group", default=None), Arg("--name", default=None, help="a part of the job's name"),
    Arg("--limit", type=int, default=50),
)
def jobs(opts: Options, io: IO) -> Result:
    rows = find(opts["queue"], opts["state"], opts["group"], opts["name"], max(opts["limit"], 1))
    text = [{**{k: v for k, v in r.items() if k != "age"}, "age": age(r["age"])} for r in rows]
    return Result(rows, text)


def locate(job_id: str, queue: str | None) -> Any:
    """A job by id in the named queue, or in every registered queue; JobNotFound naming where it looked."""
    names = [queue] if queue else sorted(registry.known_queues())
    for name in names:
        try:
            return LogicalQueue(name).get_job(job_id)
        except JobNotFound:
            continue
    raise JobNotFound(f"no job {job_id!r} in {'queue ' + queue if queue else f'any of {len(names)} queues'}")


@subcommand("show", "Show one job: every stored field, its errors and result.", Arg("id"), QUEUE)
def show_job(opts: Options, io: IO) -> Result:
    try:
        job = locate(opts["id"], opts["queue"])
    except JobNotFound as exc:
        return Result(None, ok=False, failure=str(exc))
    data = dataclasses.asdict(job)
    lines = [f"{k:>12}  {v}" for k, v in data.items() if k not in ("errors", "error") and v not in (None, "", [], {})]
    lines += [f"{'error':>12}  {line}" for line in (job.error or "").splitlines()]
    lines += [f"{'attempt ' + str(e.get('attempt')):>12}  {e.get('error')}" for e in job.errors]
    return Result(data, lines=lines)
