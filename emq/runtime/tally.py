"""A worker's statistics per queue and job name, tallied from what the server decided of each attempt,
and sent about once a second on a finish (``_jobstats.lua`` writes them into the minute's window).

Why here and not in the finish script: to bucket a job's durations the script had to read its name,
claim and due times and do the arithmetic a job, which made the finish much dearer a job (the figures:
docs/reference/performance.md); the worker knows all of it already (the claim brought the times, the
reply brings the state), and a tally a second costs the server one BITFIELD a name.

A job's run time is the worker's: from the claim's arrival to the finish's reply (what its log line says
as ms=); its wait, the server's: from its due time to its claim. A tally not yet sent when a worker dies
is lost (a second's worth at most); a stop, a park and a burst's end send it first.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence

from ..core import histogram
from ..core.engine.queue import Stats
from ..core.records import Outcome
from .held import Held

FLUSH_EVERY = 1.0  # seconds a tally waits at most for a finish to carry it
RAN = frozenset({"failed", "dead", "discarded"})  # outcomes of an attempt that ran and raised
IGNORED = frozenset({"stale", "missing"})  # the server discarded the outcome: nothing to count
_SMALL = [histogram.bucket(ms) for ms in range(4096)]  # the bucket of a duration under 4 s, looked up
_WAIT_SLOT = [8 + 2 * b for b in _SMALL]  # the slot of a wait under 4 s
LOG_FACTOR = histogram.PER_DOUBLING / math.log(2)
LAST = histogram.BUCKETS - 1


def _bucket(ms: int) -> int:
    if ms < 4096:
        return _SMALL[ms] if ms > 0 else 0
    return min(math.floor(math.log(ms) * LOG_FACTOR) + 1, LAST)


def _slots(names: dict[str, dict[int, int]], name: str) -> dict[int, int]:
    s = names.get(name)
    if s is None:
        s = names[name] = {0: 0, 1: 0, 2: 0, 3: 0, 4: 0, 5: 0, 6: 0}
    return s


def _add(s: dict[int, int], slot: int, k: int) -> None:
    s[slot] = s.get(slot, 0) + k


def _ran(s: dict[int, int], slot: int, n: int) -> None:
    """Count n completed jobs whose runs fall in one bucket (its slot)."""
    s[0] += n
    s[1] += n
    s[slot] = s.get(slot, 0) + n


class Tally:
    """Statistics per queue and job name since each queue's last ``take``."""

    def __init__(self) -> None:
        self.queues: dict[str, dict[str, dict[int, int]]] = {}  # queue -> name -> slot -> value
        self.since: dict[str, float] = {}  # queue -> monotonic time of its first note since the last take

    def note(self, queue: str, done: Sequence[tuple[Held, Outcome]], states: Sequence[str]) -> None:
        """Count the attempts one finish settled, by the states the server decided.

        Run on the loop's thread for every job, so its common case is lean: a completed job of the name
        before it (a batch is mostly one function's), claimed in the same batch as it (one run bucket).
        """
        now = time.monotonic()
        names = self.queues.get(queue)
        if names is None:
            names = self.queues[queue] = {}
            self.since[queue] = now
        wslots, name, started, s = _WAIT_SLOT, None, None, None
        rb = ran = n = 0
        for (held, o), state in zip(done, states):  # noqa: B905 (as long: one state an outcome)
            if state != "completed":
                self._other(names, held, o, state, now)
                continue
            job = held.job
            if job.name != name:  # a new name (a batch is mostly one function's)
                if n:
                    _ran(s, rb, n)
                name, s, n = job.name, _slots(names, job.name), 0
                started = None
            if held.started is not started:  # the jobs of one claim share its arrival (Dispatch.start)
                if n:
                    _ran(s, rb, n)
                started, n = held.started, 0
                ran = int((now - started) * 1000)
                rb = 7 + 2 * _bucket(ran)
                if ran > s[5]:
                    s[5] = ran
            n += 1
            w = job.claimed_ms - job.due_ms
            k = wslots[w] if 0 <= w < 4096 else 8 + 2 * _bucket(w)
            s[k] = s.get(k, 0) + 1
            if w > s[6]:
                s[6] = w
        if n:
            _ran(s, rb, n)

    @staticmethod
    def _other(names: dict[str, dict[int, int]], held: Held, o: Outcome, state: str, now: float) -> None:
        """A job that did not complete: failed (retried or dead), dead without a run, or nothing to count."""
        if state in IGNORED:
            return
        if o.outcome in RAN:
            kind = 4 if state == "dead" else 3
        elif state == "dead":
            kind = 0  # dead without a run of its own (corrupt, unknown past its grace)
        else:
            return  # given back without spending an attempt (spared, rate limited, held for its name)
        job = held.job
        s = _slots(names, job.name)
        s[0] += 1
        if not kind:
            s[4] += 1
            return
        s[kind] += 1
        s[2] += 1
        run, wait = int((now - held.started) * 1000), max(job.claimed_ms - job.due_ms, 0)
        _add(s, 7 + 2 * _bucket(run), 1)
        _add(s, 8 + 2 * _bucket(wait), 1)
        s[5], s[6] = max(s[5], run), max(s[6], wait)

    def take(self, queue: str, now: float | None = None) -> Stats | None:
        """The queue's tally once FLUSH_EVERY passed since its first note (now=None: whatever its age),
        with the queue's total as name "", forgotten here; None when there is none to send yet."""
        names = self.queues.get(queue)
        if not names or (now is not None and now - self.since[queue] < FLUSH_EVERY):
            return None
        del self.queues[queue]
        total = histogram.merged(0, [[s.get(i, 0) for i in range(max(s) + 1)] for s in names.values()])
        out: dict[str, dict[int, int]] = {n: {k: v for k, v in s.items() if v} for n, s in names.items()}
        out[""] = {i: v for i, v in enumerate(total.slots) if v or i == 0}
        return out

    def due_in(self, queue: str, now: float) -> float | None:
        """Seconds until the queue's tally is due (0: now), or None when there is none."""
        if not self.queues.get(queue):
            return None
        return max(self.since[queue] + FLUSH_EVERY - now, 0.0)
