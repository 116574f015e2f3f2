"""``manage.py emq jobs`` and ``show``: list a queue's jobs in one state, filtered, or act on every one that
matches (``matching``); show one job whole.

A list reads at most SCAN_BUDGET entries of the state's set in each partition, a slice a round trip
(``Queue.sift``; ready jobs: ``Queue.lane_sift``), the time range on the set's index; it never loads a
whole set, and says when it stopped before the end.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ..core import locate
from ..core.connection import get_client, guard
from ..core.encoding import cut_deep
from ..core.engine.filters import Filters
from ..core.logical import LogicalQueue
from ..errors import AmbiguousJobId, JobNotFound
from . import matching
from .known import STATES, bad_state, unknown_queue, when
from .registry import IO, QUEUE, YES, Arg, Options, Result, subcommand
from .render import age

SCAN_BUDGET = 10_000  # entries a list reads at most in each partition
FIELDS = ("fn", "state", "group", "attempts", "max_attempts", "created", "due", "claimed", "finished", "error")
# The time a list shows for each state (ready: when due).
WHEN = {"waiting": "created", "scheduled": "due", "active": "claimed", "completed": "finished", "dead": "finished",
        "cancelled": "finished"}


@dataclasses.dataclass
class Found:
    """A list: its rows, and how much of the state's jobs (in the time range) it read."""

    rows: list[dict[str, Any]]
    read: int = 0
    in_range: int = 0
    more: bool = False


def find(queue: str, state: str, filters: Filters, limit: int) -> Found:
    """Up to limit jobs of a queue in one state that pass filters, in the list's order, each partition's
    first; at most SCAN_BUDGET entries read in each partition."""
    found, now = Found([]), _now()
    for q in LogicalQueue(queue).partitions:
        cursor: str | None = ""
        read = 0
        while cursor is not None and read < SCAN_BUDGET and len(found.rows) < limit:
            if state == "ready":
                s = q.lane_sift(filters, cursor, budget=SCAN_BUDGET - read, want=limit - len(found.rows),
                                fields=FIELDS)
            else:
                s = q.sift(state, filters, cursor, budget=SCAN_BUDGET - read, want=limit - len(found.rows),
                           fields=FIELDS)
            found.rows += [_row(q.name, e.id, e.fields, state, now) for e in s.entries]
            read, cursor = read + s.read, s.cursor
            found.in_range += s.in_range if read == s.read else 0
        found.read += read
        found.more = found.more or (cursor is not None and len(found.rows) < limit)
    return found


def _now() -> int:
    with guard():
        sec, usec = get_client().time()
    return int(sec) * 1000 + int(usec) // 1000


def _row(queue: str, job_id: str, f: dict[str, Any], state: str, now: int) -> dict[str, Any]:
    """A listed job; its age is the ms since the time its list shows, None while that is ahead (a job not due yet)."""
    when_ms = f[WHEN.get(state, "due")]
    age = None if when_ms is None or int(when_ms) > now else now - int(when_ms)
    return {"id": job_id, "name": f["fn"], "state": f["state"], "group": f["group"],
            "attempts": int(f["attempts"] or 0), "queue": queue, "age": age,
            "error": (f["error"] or "").split("\n", 1)[0] or None}


def filters_of(opts: Options) -> Filters:
    """The filters of a ``jobs`` command line (--since and --until: ISO 8601, or an age such as 2h)."""
    now = _now()
    return Filters(opts["name"] or "", opts["group"] or "", opts["origin"] or "", opts["error"] or "",
                   opts["match"] or "", when(opts["since"], now, "--since"), when(opts["until"], now, "--until"))


@subcommand(
    "jobs", "List a queue's jobs in one state (newest finished first, the next due first), filtered; or act on "
    "every job that matches: --retry, --run-now, --cancel, --delete or --move-to QUEUE.",
    Arg("queue"), Arg("--state", default="ready", help=f"one of {', '.join(STATES)} (default: ready)"),
    Arg("--group", default=None), Arg("--name", default=None, help="a part of the job's name"),
    Arg("--origin", default=None, help="what minted it, e.g. repeat:<name>"),
    Arg("--error", default=None, metavar="CLASS", help="the class of its error, e.g. ValueError ('*': any error)"),
    Arg("--match", default=None, metavar="TEXT", help="a part of its arguments (their JSON)"),
    Arg("--since", default=None, metavar="WHEN", help="ISO 8601 (UTC without an offset) or an age such as 2h"),
    Arg("--until", default=None, metavar="WHEN", help="the same; on the state's time: minted (waiting), due "
        "(scheduled, ready), lease expiry (active), finished (completed, dead, cancelled)"),
    Arg("--limit", type=int, default=50),
    *matching.ARGS, YES,
)
def jobs(opts: Options, io: IO) -> Result:
    refused = unknown_queue(opts["queue"]) or bad_state(opts["state"]) or matching.bad_action(opts)
    if refused:
        return Result(None, ok=False, failure=refused)
    filters = filters_of(opts)
    if matching.chosen(opts):
        return matching.act(opts, filters, io)
    found = find(opts["queue"], opts["state"], filters, max(opts["limit"], 1))
    text = [{**{k: v for k, v in r.items() if k != "age"}, "age": age(r["age"])} for r in found.rows]
    lines = []
    if found.more:
        lines.append(f"(read {found.read:,} of {found.in_range:,} {opts['state']} jobs"
                     f"{' in range' if filters.ranged else ''} and stopped: more may match further on; narrow the "
                     "filters or raise --limit)")
    return Result(found.rows, text, lines)


@subcommand("show", "Show one job: every stored field, its errors and result.", Arg("id"), QUEUE)
def show_job(opts: Options, io: IO) -> Result:
    try:
        job = locate.read(opts["id"], opts["queue"])
    except (JobNotFound, AmbiguousJobId) as exc:
        return Result(None, ok=False, failure=str(exc))
    data = {f.name: getattr(job, f.name) for f in dataclasses.fields(job)}  # asdict recurses: a value may be deep
    for name in ("args", "kwargs", "result", "meta", "errors"):
        data[name] = cut_deep(data[name])
    lines = [f"{k:>12}  {v}" for k, v in data.items() if k not in ("errors", "error") and v not in (None, "", [], {})]
    lines += [f"{'error':>12}  {line}" for line in (job.error or "").splitlines()]
    lines += [f"{'attempt ' + str(e.get('attempt')):>12}  {e.get('error')}" for e in job.errors]
    return Result(data, lines=lines)
