"""Signals the worker sends about each attempt (``emq.signals`` re-exports them).

``job_started`` is sent once per attempt, in the thread (or coroutine) that runs it, before the
job's function is called. ``job_finished`` is sent once per attempt that reached the server, by
the worker's loop *after* the finish script recorded it, with the state that script decided
(``completed``, ``ready`` or ``scheduled`` for a retry, ``dead``; ``stale`` or ``missing`` when
the outcome changed nothing): receivers never guess the retry rule.
"""

from __future__ import annotations

from django.dispatch import Signal

# kwargs: queue (physical name), job (records.Claimed), attempt (int, 1 for the first)
job_started = Signal()

# kwargs: queue (physical name), job (records.Claimed), attempt (int), state (str, see above),
# outcome (str: "completed" | "retried" | "dead" | "cancelled" | "timed out", "rate limited" | "unknown name"
# when given back without an attempt spent, or "stale" | "missing" when the server discarded it; see
# runtime.outcomes), duration (seconds the attempt ran here),
# exception (what the job raised, or None), record (records.Outcome as sent to the server)
job_finished = Signal()
