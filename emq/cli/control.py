"""``manage.py emq cancel``, ``pause``, ``resume`` and ``signal``: act on work on purpose, through the engine.

A cancel ends scheduled, ready and running jobs as ``cancelled`` (``cancel.lua``); a pause stops
every claim from a queue (each partition of a partitioned one) or from one group's lane until it
is resumed. Pausing what is paused already, or resuming what runs, changes nothing and says so. A
signal reaches a durable job's ``ctx.wait_for`` (``emq.signal``).
"""

from __future__ import annotations

import json

from ..core import registry
from ..core.journal_ops import deliver
from ..core.logical import LogicalQueue
from .bulk import by_id, per_id
from .registry import IO, QUEUE, Arg, Options, Result, subcommand

GROUP = Arg("--group", default=None, help="only this group's lane (default: the whole queue)")


@subcommand(
    "cancel", "Cancel scheduled, ready or running jobs by id: each ends cancelled (a running one is stopped).",
    Arg("ids", nargs="+", metavar="ID"), QUEUE,
)
def cancel(opts: Options, io: IO) -> Result:
    return by_id(per_id(opts["queue"], opts["ids"], lambda q, ids: q.cancel(ids)), "cancelled")


def _switch(opts: Options, pause: bool) -> Result:
    """Pause or resume a queue or one lane; a queue no job or worker ever used is refused (a typo)."""
    name, group = opts["queue"], opts["group"]
    queue = LogicalQueue(name)
    known = registry.known_queues()
    if name not in known and not any(q.paused(group) for q in queue.partitions):
        listed = ", ".join(sorted(known)) or "none yet"
        return Result(None, ok=False, failure=f"no queue {name!r} in this project (known: {listed}); "
                                               "a queue is known once a job was enqueued to it or a worker served it")
    changed = queue.pause(group) if pause else queue.resume(group)
    what = f"lane {group!r} of queue {name!r}" if group else f"queue {name!r}"
    if not changed:
        line = f"{what} was {'already' if pause else 'not'} paused: nothing changed"
    elif pause:
        line = f"paused {what}: its jobs stay ready and no worker starts one until it is resumed"
    else:
        line = f"resumed {what}: workers take its ready jobs again"
    return Result({"queue": name, "group": group, "paused": pause, "changed": changed}, lines=[line])


@subcommand(
    "pause", "Pause a queue, or one group's lane: its jobs stay ready and no worker claims them until resumed.",
    Arg("queue"), GROUP,
)
def pause(opts: Options, io: IO) -> Result:
    return _switch(opts, True)


@subcommand("resume", "Resume a paused queue, or one group's lane, and wake its parked workers.", Arg("queue"), GROUP)
def resume(opts: Options, io: IO) -> Result:
    return _switch(opts, False)


WHY = {"sent": "a signal of that name came before", "late": "its wait for it timed out", "missing": "no such job"}


@subcommand(
    "signal", "Send a signal to a durable job: its ctx.wait_for(NAME) returns the payload; a job waiting for it "
    "runs at once.", Arg("id", metavar="ID"), Arg("name", metavar="NAME"),
    Arg("--payload", default="null", help="the payload, JSON (default: null)"), QUEUE,
)
def signal(opts: Options, io: IO) -> Result:
    job_id, name = opts["id"], opts["name"]
    try:
        json.loads(opts["payload"])
    except ValueError as exc:
        return Result(None, ok=False, failure=f"--payload is not JSON ({exc}): e.g. --payload '{{\"ok\": true}}'")
    status = deliver(job_id, name, opts["payload"], opts["queue"])
    data = {"id": job_id, "name": name, "taken": status == "ok", "status": status}
    if status == "ok":
        return Result(data, lines=[f"job {job_id} took signal {name!r}"])
    why = WHY.get(status, f"it has ended ({status})")
    return Result(data, ok=False, failure=f"job {job_id} did not take signal {name!r}: {why}")
