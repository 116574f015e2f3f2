"""``manage.py emq retry``, ``delete`` and ``purge``: state changes on many jobs, through the engine.

Without --queue each id is found wherever it is (``core.locate``: one round trip for all of them);
with it, ids are looked for in each partition of that queue in turn (a status "missing" moves on to
the next). Each call handles a chunk of 1,000 ids. Acting on a whole set asks first unless --yes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ..core import locate
from ..core.engine import Queue
from ..core.logical import LogicalQueue
from ..errors import AmbiguousJobId, JobNotFound
from .registry import IO, QUEUE, YES, Arg, Options, Result, subcommand
from .render import Progress, confirm, duration

Op = Callable[[Queue, Sequence[str]], list[str]]
CHUNK = 1000  # ids per call of op


def per_id(queue: str | None, ids: Sequence[str], op: Op) -> list[dict[str, str]]:
    """Apply op to ids in the queue given, else wherever each is: one row per id with the status it got
    ("ambiguous": a caller's id in several queues, which --queue settles)."""
    if queue is None:
        return _located(ids, op)
    statuses = dict.fromkeys(ids, "missing")
    left = list(dict.fromkeys(ids))
    for q in LogicalQueue(queue).partitions:
        if not left:
            break
        answers = op(q, left)
        statuses.update((i, s) for i, s in zip(left, answers, strict=True) if s != "missing")
        left = [i for i, s in zip(left, answers, strict=True) if s == "missing"]
    return [{"id": i, "status": statuses[i]} for i in ids]


def _located(ids: Sequence[str], op: Op) -> list[dict[str, str]]:
    """per_id without a queue: the ids found at once, then op once per queue that holds some."""
    statuses: dict[str, str] = {}
    by_queue: dict[str, tuple[Queue, list[str]]] = {}
    for job_id, found in locate.find(ids).items():
        try:
            q = found.one()
        except JobNotFound:
            statuses[job_id] = "missing"
        except AmbiguousJobId:
            statuses[job_id] = "ambiguous"
        else:
            by_queue.setdefault(q.name, (q, []))[1].append(job_id)
    for q, part in by_queue.values():
        for start in range(0, len(part), CHUNK):
            chunk = part[start : start + CHUNK]
            statuses.update(zip(chunk, op(q, chunk), strict=True))
    return [{"id": i, "status": statuses[i]} for i in ids]


def by_id(rows: list[dict[str, str]], verb: str) -> Result:
    bad = [r for r in rows if r["status"] != "ok"]
    hint = "; an id in several queues needs --queue" if any(r["status"] == "ambiguous" for r in rows) else ""
    return Result(rows, rows, ok=not bad, failure=f"{len(bad)} of {len(rows)} job(s) not {verb}{hint}" if bad else "")


def retry_all_dead(queue: str, io: IO, yes: bool) -> Result:
    """Retry every dead job of a queue (after asking), a chunk of 1,000 per round trip."""
    parts = LogicalQueue(queue).partitions
    total = sum(q.size("dead") for q in parts)
    if total == 0:
        return Result({"retried": 0}, lines=[f"no dead job in {queue!r}"])
    if not confirm(io, f"Retry {total:,} dead job(s) of {queue!r}?", yes):
        return Result({"retried": 0}, ok=False, failure="not confirmed: nothing retried")
    progress, retried = Progress(io, "retrying", total), 0
    for q in parts:
        while ids := q.ids("dead", 0, 1000)[0]:
            done = sum(s == "ok" for s in q.admin.retry(ids))
            retried += done
            progress.advance(len(ids))
            if not done:
                break
    progress.close()
    return Result({"retried": retried}, lines=[f"retried {retried:,} dead job(s) of {queue!r}"], ok=retried == total,
                  failure=f"{total - retried} dead job(s) not retried")


@subcommand(
    "retry", "Give dead or cancelled jobs a fresh budget of attempts and make them ready now; a job of a flow "
    "resumes it (the jobs that died because of it wait for it again).",
    Arg("ids", nargs="*", metavar="ID"), QUEUE,
    Arg("--all-dead", metavar="QUEUE", default=None, help="every dead job of this queue"), YES,
)
def retry(opts: Options, io: IO) -> Result:
    if opts["all_dead"]:
        return retry_all_dead(opts["all_dead"], io, opts["yes"])
    if not opts["ids"]:
        return Result(None, ok=False, failure="give job ids, or --all-dead QUEUE")
    return by_id(per_id(opts["queue"], opts["ids"], lambda q, ids: q.admin.retry(ids)), "retried")


@subcommand(
    "delete", "Delete scheduled, waiting, completed or dead jobs by id (ready and active ones are refused).",
    Arg("ids", nargs="+", metavar="ID"), QUEUE,
)
def delete(opts: Options, io: IO) -> Result:
    return by_id(per_id(opts["queue"], opts["ids"], lambda q, ids: q.admin.delete(ids)), "deleted")


@subcommand(
    "purge", "Delete a queue's completed or dead jobs, optionally only those finished long enough ago.",
    Arg("queue"), Arg("--state", required=True, choices=["completed", "dead"]),
    Arg("--older-than", default="0s", metavar="AGE", help="e.g. 7d, 12h, 30m (default: all)"), YES,
)
def purge(opts: Options, io: IO) -> Result:
    age_ms = int(duration(opts["older_than"]) * 1000)
    parts, state = LogicalQueue(opts["queue"]).partitions, opts["state"]
    total = sum(q.admin.purge(state, age_ms, 0)[1] for q in parts)
    older = f" finished over {opts['older_than']} ago" if age_ms else ""
    if total == 0:
        return Result({"deleted": 0}, lines=[f"no {state} job{older} in {opts['queue']!r}"])
    if not confirm(io, f"Delete {total:,} {state} job(s){older} of {opts['queue']!r}?", opts["yes"]):
        return Result({"deleted": 0}, ok=False, failure="not confirmed: nothing deleted")
    progress, deleted = Progress(io, "purging", total), 0
    for q in parts:
        while True:
            n, left = q.admin.purge(state, age_ms)
            deleted += n
            progress.advance(n)
            if n == 0 or left == 0:
                break
    progress.close()
    return Result({"deleted": deleted}, lines=[f"deleted {deleted:,} {state} job(s){older} of {opts['queue']!r}"])
