"""The operations of one queue's lifecycle: mint, claim, finish, leases, the Pump's tick, counts.

Every call is one round trip (a pipeline of several scripts at most); each method is the only
place that knows its script's ARGV order (see the headers in ``emq/lua/``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ... import errors
from .. import config, scripts, stored
from ..connection import guard
from ..records import Claimed, Counts, Job, Outcome
from ..ticks import Tick
from ..wire import Line
from .base import MAX_BATCH
from .control import ControlOps
from .families import Families
from .lanereads import LaneReads
from .lanesift import LaneSift
from .live import Progress, progress_call
from .mint import MintOps
from .reads import ReadOps
from .sift import SiftOps

# A round trip ``Queue.send_exchange`` left on the wire: its scripts' calls, its outcomes, the jobs it claims.
Sent = tuple[list[tuple[str, list[str], list[Any]]], Sequence[Outcome], int]
# A worker's statistics per job name ("" the queue's total) since it last sent them: slot -> value (histogram.py),
# slot 0 first; a finish carries them (_jobstats.lua).
Stats = Mapping[str, Mapping[int, int]]


class Queue(MintOps, ControlOps, ReadOps, LaneReads, SiftOps, LaneSift, Families):
    """One physical queue: the hot path, leases, the Pump's step, cancel and pause, its pages and lanes
    (``reads``, ``lanereads``), its filtered slices (``sift``, ``lanesift``); ``repeat``, ``admin``, ``flow``
    (jobs that wait for others), ``live`` (waiters, progress), ``rates`` (rate limits), ``keep`` (the Pump's
    upkeep), ``quotas`` (tenant quotas) and ``crypto`` (rekey).

    Built only inside ``emq.core`` (a test pins it): the rest of emq asks ``emq.core.logical`` for the
    physical queues of a name, and users name logical queues (``emq.Queue``).
    """

    def bclaim(self, n: int, worker_id: str) -> list[Claimed]:
        """Lease up to n ready jobs, fairly across groups; each comes with its fencing token."""
        return Claimed.from_reply(self._run("bclaim", [min(n, MAX_BATCH), worker_id]))

    def finish(self, outcomes: Sequence[Outcome], stats: Stats | None = None) -> list[str]:
        """Settle a batch, each item on its own; per item the state the script decided.

        "completed", "scheduled" or "ready" (retried), "dead"; or "stale" / "missing" when the
        item changed nothing (see ``records.FINISHED``). stats: a worker's statistics to record too.
        """
        states: list[str] = []
        for start in range(0, max(len(outcomes), 1 if stats else 0), MAX_BATCH):
            states.extend(_states(self._run("finish", _finish_argv(outcomes[start : start + MAX_BATCH], stats))))
            stats = None
        return states

    def exchange(self, outcomes: Sequence[Outcome], n: int, worker_id: str,
                 meanwhile: Callable[[], None] | None = None, progress: Sequence[Progress] = (),
                 stats: Stats | None = None) -> Exchange:
        """Finish a batch and claim the next in one pipelined round trip (the worker's hot path), saying what
        the server took when it refused part of it (full, read-only...): the finish's states or None, the
        claim's jobs, the error.
        ``meanwhile`` runs while the round trip is on the wire (the worker writes its last lines then);
        ``progress``, the last reports of the finishing jobs not written yet, goes before their finish;
        ``stats``, a worker's statistics, ride on the finish (one with no items, if need be)."""
        calls = _calls(outcomes, n, worker_id, progress, stats)
        replies = self._run_many(calls, raise_on_error=False, meanwhile=meanwhile)
        return self._exchanged(outcomes, n, _past_progress(calls, replies))

    def send_exchange(self, line: Line, outcomes: Sequence[Outcome], n: int, worker_id: str,
                      progress: Sequence[Progress] = (), stats: Stats | None = None) -> Sent:
        """``exchange``'s round trip sent on a held connection, its replies left on the wire:
        ``read_exchange`` of what this returns takes them (oldest first), while the server runs this one.
        At most MAX_BATCH outcomes: ``exchange`` finishes the rest with a call of its own, which a held
        connection cannot make with replies in flight."""
        if len(outcomes) > MAX_BATCH:
            raise ValueError(f"send_exchange takes at most {MAX_BATCH} outcomes a round trip, not {len(outcomes)}")
        calls = [(name, [self.keys.ns], args) for name, args in _calls(outcomes, n, worker_id, progress, stats)]
        with guard():
            scripts.send_on(line, calls)
        return calls, outcomes, n

    def read_exchange(self, line: Line, sent: Sent) -> Exchange:
        """The Exchange of the oldest round trip ``send_exchange`` put on line."""
        calls, outcomes, n = sent
        with guard():
            return self._exchanged(outcomes, n, _past_progress(calls, scripts.read_on(line, calls)))

    def _exchanged(self, outcomes: Sequence[Outcome], n: int, replies: list[Any]) -> Exchange:
        errors = [r for r in replies if isinstance(r, Exception)]
        states = _states(replies[0]) if outcomes and not isinstance(replies[0], Exception) else None
        claimed = Claimed.from_reply(replies[-1]) if n > 0 and not isinstance(replies[-1], Exception) else []
        if states is not None and len(outcomes) > MAX_BATCH:
            states = states + self.finish(outcomes[MAX_BATCH:])
        return Exchange(states, claimed, _as_state(errors[0]) if errors else None)

    def extend_lock(self, job_id: str, token: int, ms: int) -> bool:
        """Renew one lease; only the holder of the current token of an active job succeeds."""
        return self.extend_locks([(job_id, token)], ms)[0] == "ok"

    def extend_locks(self, items: Iterable[tuple[str, int]], ms: int) -> list[str]:
        """Renew many leases in one round trip: "ok", "cancelled", "stale" or "missing" per item."""
        argv: list[Any] = [int(ms)]
        for job_id, token in items:
            argv.extend((job_id, token))
        return self._run("extend", argv) if len(argv) > 1 else []

    def release_lock(self, job_id: str, token: int, delay: float | None = None) -> bool:
        """Give a job back (ready now, or scheduled after delay seconds); the attempt stays counted."""
        return self.release_locks([(job_id, token)], delay)[0] == "ok"

    def release_locks(self, items: Iterable[tuple[str, int]], delay: float | None = None) -> list[str]:
        """Give many jobs back in one round trip: "ok", "stale" or "missing" per item."""
        delay_ms = int((delay or 0) * 1000)
        argv: list[Any] = []
        for job_id, token in items:
            argv.extend((job_id, token, delay_ms))
        return self._run("release", argv) if argv else []

    def sweep(self, limit: int = MAX_BATCH) -> list[str]:
        """Reclaim every lease expired on the server clock; returns the reclaimed ids."""
        swept: list[str] = []
        while True:
            ids = self._run("sweep", [limit])
            swept.extend(ids)
            if len(ids) < limit:
                return swept

    def tick(self, pump_id: str, ttl_ms: int, park_ms: int, limit: int = MAX_BATCH, late_ms: int = 0) -> Tick:
        """One Pump step (lead, promote, reclaim) and how long to park after it; late_ms: how long after
        the time its last tick planned this Pump sends it (its own delay, which is no server stall)."""
        grace_ms = int(float(config.get("EMQ_STALL_GRACE") or 0) * 1000)
        return Tick.from_reply(self._run("tick", [pump_id, ttl_ms, limit, park_ms, grace_ms, max(int(late_ms), 0)]))

    def resign(self, pump_id: str) -> bool:
        """Give up this Pump's lead at once, only if it still holds it (compare-and-delete)."""
        return bool(self._run("resign", [pump_id]))

    def counts(self) -> Counts:
        """Jobs per state and the next due time, on the server clock."""
        return Counts.from_reply(self._run("counts", []))

    def set_group_limit(self, group: str, limit: int | None) -> None:
        """Cap how many jobs of one group may be active at once (None lifts the cap)."""
        if limit is not None and int(limit) < 1:
            raise ValueError(f"group limit for {group!r} must be >= 1 or None, not {limit!r}")
        self._run("set_cap", [group, "" if limit is None else int(limit)])

    def get_job(self, job_id: str) -> Job:
        """Read one job; JobNotFound when it does not exist (or was trimmed)."""
        with guard():
            h = stored.read_all(self.client, self.keys.job(job_id))
        if not h:
            raise errors.JobNotFound(f"no job {job_id!r} in queue {self.name!r} (prefix {self.keys.prefix!r})")
        return Job.from_fields(self.name, job_id, h)


@dataclass(frozen=True)
class Exchange:
    """What one finish-and-claim round trip did: states None when the finish was refused."""

    states: list[str] | None
    claimed: list[Claimed]
    error: Exception | None


def _calls(outcomes: Sequence[Outcome], n: int, worker_id: str, progress: Sequence[Progress] = (),
           stats: Stats | None = None) -> list[tuple[str, list[Any]]]:
    calls: list[tuple[str, list[Any]]] = [progress_call(progress)] if progress else []
    if outcomes or stats:
        calls.append(("finish", _finish_argv(outcomes[:MAX_BATCH], stats)))
    if n > 0:
        calls.append(("bclaim", [min(n, MAX_BATCH), worker_id]))
    return calls


def _past_progress(calls: list, replies: list[Any]) -> list[Any]:
    """The replies of the finish and the claim: a progress write's, first when sent, is not waited on
    (a job's last report is worth a try, never a retry of its finish)."""
    return replies[1:] if calls and calls[0][0] == "progress" else replies


def _as_state(exc: Exception) -> Exception:
    """An error reply as the caller sees errors: a server state becomes ServerFull / ServerUnavailable."""
    try:
        with guard():
            raise exc
    except Exception as seen:
        return seen


def counts_of(queues: Sequence[Queue]) -> list[Counts]:
    """The counts of several queues in one pipelined round trip (the dashboard's overview)."""
    if not queues:
        return []
    with guard():
        replies = scripts.run_many(queues[0].client, [("counts", [q.keys.ns], []) for q in queues])
    return [Counts.from_reply(r) for r in replies]


def _states(reply: list[str] | int) -> list[str]:
    """A finish's states: its list, or n when all n items completed (finish.lua)."""
    return ["completed"] * reply if isinstance(reply, int) else reply


def _finish_argv(outcomes: Sequence[Outcome], stats: Stats | None = None) -> list[Any]:
    ttl_ms = int(config.get("EMQ_RESULT_TTL") * 1000)
    argv: list[Any] = [len(outcomes), ttl_ms, config.get("EMQ_KEEP_COMPLETED")]
    for o in outcomes:  # a completion with a null result (most) in 2 fields, any other in 5 (finish.lua)
        if o.value == "null" and o.outcome == "completed":
            argv += (o.id, o.token)
        else:
            argv += (o.id, o.outcome, o.token, o.value, o.retry_ms)
    if stats:  # per name: name, k, k (slot, value) pairs; then "jstats:<elements>" (_jobstats.lua's stat_apply)
        tail: list[Any] = []
        for name, slots in stats.items():
            tail += (name, len(slots))
            for slot, value in slots.items():
                tail += (f"#{slot}", value)
        argv += (*tail, f"jstats:{len(tail)}")
    return argv
