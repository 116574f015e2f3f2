"""Dynamic children of a durable job: ``ctx.spawn`` then ``ctx.wait_children`` (BullMQ's
WaitingChildrenError, Hatchet's child spawning), over the flow machinery of ``after=``.

The parent is a job that waits after its children: before a child is minted, its id joins the
parent's ``deps:<id>`` (under the attempt's token), then the child is linked to the parent
(``flow_link``: ``children:<child id>``, as for any job that waits for another), so each child's
end takes itself out of ``deps`` in the parent's queue (``_flow.lua``'s settle; through the relay
when the child is in another queue). ``wait_children`` suspends the parent while ``deps`` holds
any (no attempt spent); the last child's end makes it ready. Each spawn is a journal entry, so a
later run returns the same child without minting it again; the children's results, read once
they all ended, are one entry too.
"""

from __future__ import annotations

from typing import Any

from ..core import journal, journal_ops
from ..core.logical import JobRef
from ..errors import ChildFailed
from .steps import Suspended, encoded, loaded, record, write

ENDED = ("completed", "dead", "cancelled", "missing")  # "missing": deleted, or trimmed before it was read


def spawn(ctx: Any, target: Any, args: tuple, kwargs: dict) -> JobRef:
    """``ctx.spawn``: mint a child (once, whatever later runs do) that ``wait_children`` waits for."""
    fn, args, kwargs = _call(ctx, target, args, kwargs)
    j = loaded(ctx, "ctx.spawn")
    j.spawns += 1
    field = journal.field("p", str(j.spawns))
    stored = j.fields.get(field)  # type: ignore[union-attr]
    if stored is not None:
        logical, physical, cid = journal.value(stored)
        j.kids.append((physical, cid, None))
        return JobRef(cid, logical)
    cid = f"{ctx.job_id}.{j.spawns}"  # the same id in every run: a mint that runs twice keeps the first job
    if j.inline:  # EMQ_EAGER: the child runs now (eager.run_inline), its result kept for wait_children
        spec = fn.spec(args, kwargs, "")
        j.kids.append((fn.queue, cid, encoded(ctx, f"child {cid}", j.inline(fn, spec))))
        return JobRef(spec.id, fn.queue)
    write(ctx, "", "", child=cid)  # in deps first: the child's end cannot come before it is counted
    ref = fn.using(job_id=cid).enqueue(*args, **kwargs)
    physical = journal_ops.holding(ref.queue, ref.id)
    journal_ops.link_child(physical, ref.id, ctx.queue, ctx.job_id)  # one that ended already is counted now
    record(ctx, j, field, encoded(ctx, "spawn", [ref.queue, physical, ref.id]))
    j.kids.append((physical, ref.id, None))
    return JobRef(ref.id, ref.queue)


def wait_children(ctx: Any) -> list[Any]:
    """``ctx.wait_children``: the results of the children spawned since the last wait, in spawn order.

    The run ends while any of them runs (the job waits, its slot freed, no attempt spent); a child
    that did not complete raises ``ChildFailed`` in the parent (its attempt fails as any error).
    """
    j = loaded(ctx, "ctx.wait_children")
    j.children += 1
    field = journal.field("c", str(j.children))
    kids, j.kids = j.kids, []
    stored = j.fields.get(field)  # type: ignore[union-attr]
    if stored is not None:
        return journal.value(stored)
    if not kids:
        return []
    outcomes = _inline(kids) if j.inline else _ended(kids)
    if any(state not in ENDED for state, _, _ in outcomes):
        raise Suspended(f"c||{j.children}", f"wait for {len(kids)} children")
    failed = [(cid, state, reason) for (_, cid, _), (state, _, reason) in zip(kids, outcomes, strict=True)
              if state != "completed"]
    if failed:
        raise ChildFailed(failed)
    results = "[" + ",".join(result for _, result, _ in outcomes) + "]"
    return record(ctx, j, field, journal.sealed_value(results, j.sealed))


def _call(ctx: Any, target: Any, args: tuple, kwargs: dict) -> tuple[Any, tuple, dict]:
    """(job, args, kwargs) of what ``ctx.spawn`` was given: a job and its arguments, or a signature."""
    if hasattr(target, "fn") and hasattr(target, "takes_result"):  # canvas.Signature (which imports this layer)
        if args or kwargs:
            raise TypeError(f"ctx.spawn of job {ctx.job_id}: a signature carries its arguments; pass none beside it")
        return target.fn, tuple(target.args), dict(target.kwargs)
    if not hasattr(target, "spec") or not hasattr(target, "using"):
        raise TypeError(f"ctx.spawn of job {ctx.job_id} takes a job (@emq.job) or a signature (job.s(...)), "
                        f"not {target!r}")
    return target, tuple(args), dict(kwargs)


def _ended(kids: list[tuple[str, str, str | None]]) -> list[tuple[str, str, str]]:
    """Each child's (state, result JSON, reason), read a pipelined round trip per queue."""
    by_queue: dict[str, list[int]] = {}
    for i, (queue, _, _) in enumerate(kids):
        by_queue.setdefault(queue, []).append(i)
    out: list[Any] = [None] * len(kids)
    for queue, idx in by_queue.items():
        for i, e in zip(idx, journal_ops.ended(queue, [kids[i][1] for i in idx]), strict=True):
            out[i] = (e.state or "missing", e.result, e.reason)
    return out


def _inline(kids: list[tuple[str, str, str | None]]) -> list[tuple[str, str, str]]:
    """EMQ_EAGER: every child ran when it was spawned (a failure was raised there)."""
    return [("completed", result or "null", "") for _, _, result in kids]

