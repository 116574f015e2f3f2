"""Acting on every job that matches a list's filters, one bounded step at a time.

A step reads a slice of the list from a cursor (``Queue.sift``, ``Queue.lane_sift``: at most BUDGET entries)
and acts on the jobs it kept, at most CHUNK of them in one round trip of the action's script; it answers the
next cursor. Whoever drives the steps (the dashboard's page, one POST a step; the command line, a loop)
shows the progress between them, so an action on 100,000 jobs is 100 short requests, never one that times
out, and a step cut short is run again from the same cursor: every action is idempotent per job (a job
already retried, cancelled, deleted or moved answers its state and is left as it is).

The actions: retry (dead jobs, the engine's retry: ``AdminOps.retry``), run_now (scheduled), cancel
(waiting, scheduled, ready, active), delete (scheduled and finished), move (to another queue, ``move``),
and count, which changes nothing (a dry run).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from .filters import Filters
from .lanesift import shifted
from .move import MOVABLE, move
from .queue import Queue

BUDGET = 5000  # entries a step reads at most
CHUNK = 1000  # jobs a step changes at most: one round trip of the action's script
LISTS = ("waiting", "scheduled", "ready", "active", "stalled", "completed", "dead", "cancelled")
Run = Callable[[Queue, Sequence[str], str], list[str]]


@dataclass(frozen=True)
class Action:
    """What an action does to the jobs it gets, and the lists whose jobs it takes."""

    lists: tuple[str, ...]
    run: Run | None  # None: count only
    removes: bool = False  # the jobs leave the list (a ready lane's place moves back)


ACTIONS: dict[str, Action] = {
    "count": Action(LISTS, None),
    "retry": Action(("dead",), lambda q, ids, _: q.admin.retry(ids), True),
    "run_now": Action(("scheduled",), lambda q, ids, _: q.admin.run_now(ids), True),
    "cancel": Action(("waiting", "scheduled", "ready", "active"), lambda q, ids, _: q.cancel(ids), True),
    "delete": Action(("scheduled", "completed", "dead", "cancelled"), lambda q, ids, _: q.admin.delete(ids), True),
    "move": Action(MOVABLE, lambda q, ids, target: move(q, ids, target), True),
}


@dataclass(frozen=True)
class Step:
    """One step: where the next starts (None: the list is done), entries read, jobs that matched, jobs the
    action changed, the list's entries in range now, and how many were left as they were, by why."""

    cursor: str | None
    read: int
    matched: int
    changed: int
    in_range: int
    left: dict[str, int] = field(default_factory=dict)


def check(of: str, action: str, target: str = "") -> Action:
    """The action, or ValueError saying which lists it takes."""
    if of not in LISTS:
        raise ValueError(f"no list of jobs {of!r}; known: {', '.join(LISTS)}")
    if action not in ACTIONS:
        raise ValueError(f"no action {action!r} on all that match; known: {', '.join(ACTIONS)}")
    found = ACTIONS[action]
    if of not in found.lists:
        raise ValueError(f"{action.replace('_', ' ')} takes {', '.join(found.lists)} jobs, not {of} ones")
    if action == "move" and not target:
        raise ValueError("move needs a target queue")
    return found


def step(q: Queue, of: str, filters: Filters, action: str, cursor: str = "", *, target: str = "",
         accept: Callable[[dict], bool] | None = None, budget: int = BUDGET, want: int = CHUNK) -> Step:
    """Read the next slice of list of from cursor, and act on the jobs that match (accept: a last check
    on each, given its fn, group, args and kwargs; the dashboard's for masked arguments)."""
    act = check(of, action, target)
    fields = ("fn", "group", "args", "kwargs") if accept else ("group",)
    if of == "ready":
        sifted = q.lane_sift(filters, cursor, budget=budget, want=want, fields=fields)
    else:
        sifted = q.sift(of, filters, cursor, budget=budget, want=want, fields=fields)
    chosen = [e for e in sifted.entries if accept is None or accept(e.fields)]
    ids = [e.id for e in chosen]
    statuses = act.run(q, ids, target) if act.run and ids else ["ok"] * len(ids)
    changed = sum(s == "ok" for s in statuses) if act.run else 0
    nxt = sifted.cursor
    if of == "ready" and act.removes:
        gone = Counter(e.fields["group"] for e, s in zip(chosen, statuses, strict=True) if s == "ok")
        nxt = shifted(nxt, dict(gone))
    return Step(nxt, sifted.read, len(ids), changed, sifted.in_range, dict(Counter(s for s in statuses if s != "ok")))


@dataclass
class Total:
    """Steps added up; in_range: the entries the steps go through, when the run began."""

    in_range: int = 0
    read: int = 0
    matched: int = 0
    changed: int = 0
    left: Counter = field(default_factory=Counter)
    steps: int = 0

    def add(self, s: Step) -> None:
        self.read, self.matched, self.changed = self.read + s.read, self.matched + s.matched, self.changed + s.changed
        self.left.update(s.left)
        self.steps += 1


def in_range(queues: Sequence[Queue], of: str, filters: Filters) -> int:
    """How many entries of list of lie in filters' time range in these queues (ready: jobs ready), without
    reading them: a slice of one entry of each."""
    check(of, "count")
    plain = Filters(since=filters.since, until=filters.until, group=filters.group if of == "ready" else "")
    if of == "ready":
        return sum(q.lane_sift(plain, budget=1, want=1).in_range for q in queues)
    return sum(q.sift(of, plain, budget=1, want=1).in_range for q in queues)


def run(queues: Sequence[Queue], of: str, filters: Filters, action: str, *, target: str = "",
        each: Callable[[Total], None] | None = None, accept: Callable[[dict], bool] | None = None) -> Total:
    """Every step over these queues (a logical queue's partitions) to the end; each(total) after each step."""
    total = Total(in_range(queues, of, filters))
    for q in queues:
        cursor: str | None = ""
        while cursor is not None:
            s = step(q, of, filters, action, cursor, target=target, accept=accept)
            total.add(s)
            cursor = s.cursor
            if each:
                each(total)
    return total
