"""``manage.py emq jobs … --retry | --run-now | --cancel | --delete | --move-to QUEUE``: act on every job of
a list that matches its filters, through the engine's steps (``engine.bulk``: a slice read and up to 1,000
jobs changed a round trip), with a progress bar; it prints how many jobs it changed.

Unless ``--yes``, it first counts the jobs that match (a dry run of the same steps) and asks; ``--dry-run``
only counts. A job that changed state between the count and the action (came due, was claimed, was
retried by someone else) is left as it is and counted by why.
"""

from __future__ import annotations

from typing import Any

from ..core.engine import bulk
from ..core.engine.filters import Filters
from ..core.logical import LogicalQueue
from .known import unknown_queue
from .registry import IO, Arg, Options, Result
from .render import Progress, confirm

FLAGS = {"retry": "retry", "run_now": "run_now", "cancel": "cancel", "delete": "delete"}
VERBS = {"retry": ("retry", "retried"), "run_now": ("run now", "made ready"), "cancel": ("cancel", "cancelled"),
         "delete": ("delete", "deleted"), "move": ("move", "moved")}
ARGS = (
    Arg("--retry", action="store_true", help="retry every matching dead job with a fresh budget of attempts"),
    Arg("--run-now", action="store_true", help="make every matching scheduled job ready now"),
    Arg("--cancel", action="store_true", help="cancel every matching waiting, scheduled, ready or active job"),
    Arg("--delete", action="store_true", help="delete every matching scheduled, completed, dead or cancelled job"),
    Arg("--move-to", default=None, metavar="QUEUE", help="move every matching scheduled, ready or finished job "
        "to another queue (same id; a finished one arrives ready)"),
    Arg("--dry-run", action="store_true", help="only count the jobs the action would change"),
)


def chosen(opts: Options) -> tuple[str, str] | None:
    """The action asked for and its target queue, or None (a list)."""
    picked = [a for flag, a in FLAGS.items() if opts.get(flag)]
    if opts.get("move_to"):
        picked.append("move")
    return (picked[0], opts.get("move_to") or "") if picked else None


def bad_action(opts: Options) -> str | None:
    """Why the action options are refused (None: fine)."""
    picked = [f for f in (*FLAGS, "move_to") if opts.get(f)]
    if len(picked) > 1:
        return "give one action: " + " or ".join("--" + f.replace("_", "-") for f in picked)
    if opts.get("dry_run") and not picked:
        return "--dry-run goes with an action (--retry, --run-now, --cancel, --delete, --move-to)"
    action = chosen(opts)
    if action is None:
        return None
    try:
        bulk.check(opts["state"], *action)
    except ValueError as exc:
        return str(exc)
    return unknown_queue(action[1]) if action[1] else None


def act(opts: Options, filters: Filters, io: IO) -> Result:
    """Count (unless --yes), ask, act on every matching job; report how many it changed."""
    queue, state = opts["queue"], opts["state"]
    action, target = chosen(opts) or ("count", "")
    parts = LogicalQueue(queue).partitions
    what = f"{state} job(s) of {queue!r}" + (f" matching {filters.describe()}" if filters.active else "")
    to = f" to {target!r}" if target else ""
    data: dict[str, Any] = {"queue": queue, "state": state, "action": action, "target": target or None}
    if opts["dry_run"] or not opts["yes"]:
        matched = _steps(parts, state, filters, "count", "", io, "counting").matched
        if opts["dry_run"] or matched == 0:
            line = f"{matched:,} {what}" + (f": {VERBS[action][0]} would change them (dry run)" if matched else "")
            return Result({**data, "matched": matched, "changed": 0, "dry_run": True}, lines=[line])
        if not confirm(io, f"{VERBS[action][0].capitalize()} {matched:,} {what}{to}?", False):
            return Result({**data, "matched": matched, "changed": 0}, ok=False,
                          failure="not confirmed: nothing changed")
    total = _steps(parts, state, filters, action, target, io, VERBS[action][0])
    return _report(data, total, VERBS[action][1], what + to)


def _report(data: dict[str, Any], total: bulk.Total, done: str, what: str) -> Result:
    """What an action changed, and why it left the rest as they were (exit 1 then)."""
    left = dict(total.left)
    data.update(matched=total.matched, changed=total.changed, left=left)
    why = ", ".join(f"{n:,} {reason}" for reason, n in sorted(left.items()))
    lines = [f"{done} {total.changed:,} of {total.matched:,} {what}"]
    if why:
        lines.append(f"left as they were: {why}")
    failure = f"{total.matched - total.changed:,} of {total.matched:,} matching job(s) not {done} ({why})"
    return Result(data, lines=lines, ok=not left, failure=failure if left else "")


def _steps(parts: list, state: str, filters: Filters, action: str, target: str, io: IO, label: str) -> bulk.Total:
    progress: Progress | None = None

    def each(total: bulk.Total) -> None:
        nonlocal progress
        if progress is None:
            progress = Progress(io, label, max(total.in_range, 1))
        progress.advance(total.read - progress.done)

    total = bulk.run(parts, state, filters, action, target=target, each=each)
    if progress is not None:
        progress.close()
    return total
