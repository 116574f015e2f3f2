"""Many jobs in a given state, made fast through the engine (a mint of 1,000 a call, claims and finishes of
1,000 a call), for the console's tests: filters, actions on all that match, pages at scale."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from emq.core.engine import Queue
from emq.core.records import Outcome
from tests import jobs

CHUNK = 1000


def mint(queue: str, args: Sequence[tuple], *, due: str = "", group: Callable[[int], str] | None = None,
         fn=jobs.add) -> list[str]:
    """Jobs of fn with these positional arguments (due: "" now, "+<ms>" later), ids in order."""
    q, ids = Queue(queue), []
    for start in range(0, len(args), CHUNK * 10):
        specs = []
        for i, a in enumerate(args[start : start + CHUNK * 10], start):
            spec = fn.using(queue=queue, group=group(i) if group else None).spec(a, {}, due)
            specs.append(spec)
        q.mint(specs)
        ids += [s.id for s in specs]
    return ids


def finished(queue: str, args: Sequence[tuple], outcome: str, error: Callable[[int], str] | None = None,
             fn=jobs.add) -> list[str]:
    """Jobs that ran once and ended completed or dead (with error(i) as their error text), ids in order."""
    q, ids = Queue(queue), mint(queue, args, fn=fn)
    index = {job_id: i for i, job_id in enumerate(ids)}
    while True:
        claimed = q.bclaim(CHUNK, "console-test")
        if not claimed:
            return ids
        q.finish([Outcome(c.id, c.token, outcome, "null" if outcome == "completed" else error(index[c.id]))
                  for c in claimed])
