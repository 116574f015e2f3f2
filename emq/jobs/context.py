"""What a ``takes_context`` job receives first: who it is, a handle on its own lease, whether it was
cancelled, and where to report its progress; ``current_job()`` gives the same from anywhere in it.
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from ..core.engine import Queue

# The attempt running in this thread or coroutine, set by the worker around the job's function:
# (physical queue, job id, attempt, lease ms, stop flag, progress sink), or its JobContext.
current: ContextVar[Any] = ContextVar("emq_current_job", default=None)


class Flag:
    """A flag one thread raises and another reads (cheaper than an Event: one is made per attempt)."""

    __slots__ = ("raised",)

    def __init__(self) -> None:
        self.raised = False

    def set(self) -> None:
        self.raised = True

    def is_set(self) -> bool:
        return self.raised


@dataclass(frozen=True)
class JobContext:
    """The running attempt: ``queue`` is the physical queue holding the job, ``token`` its fence.

    ``stop`` is set by the worker when the job is cancelled (it hears so at a lease renewal) and
    by ``extend_lock`` when the server answers that the job was cancelled. ``sink`` is where
    ``progress`` leaves its value for the worker (None: nowhere, e.g. EMQ_EAGER).
    """

    job_id: str
    queue: str
    attempt: int
    token: int
    lease_ms: int
    stop: Flag = field(default_factory=Flag, repr=False, compare=False)
    sink: Any = field(default=None, repr=False, compare=False)

    @property
    def cancelled(self) -> bool:
        """True once the job was cancelled: stop soon (its outcome no longer counts)."""
        return self.stop.is_set()

    def extend_lock(self, ms: int | None = None) -> bool:
        """Renew this job's lease for ms (default: its lease length); False once it is lost or cancelled."""
        status = Queue(self.queue).extend_locks([(self.job_id, self.token)], ms or self.lease_ms)[0]
        if status == "cancelled":
            self.stop.set()
        return status == "ok"

    def progress(self, fraction: float, note: str = "") -> None:
        """Report how far the job is, 0.0 to 1.0, with an optional note; call it as often as you like.

        The worker stores the latest value with its next lease renewal, at most once a second
        (``get_job(...).progress``), so a call costs a few hundred nanoseconds and no round trip.
        """
        if not 0.0 <= fraction <= 1.0:
            raise ValueError(f"progress of job {self.job_id} must be a fraction from 0.0 to 1.0, not {fraction!r}")
        sink = self.sink
        if sink is not None:
            sink.progress = (fraction, note)
            if not sink.progress_dirty:
                sink.progress_dirty = True
                sink.nudge()


def current_job() -> JobContext | None:
    """The attempt running in this thread or coroutine (None outside a job run by a worker)."""
    value = current.get()
    if value is None or isinstance(value, JobContext):
        return value
    queue, job_id, attempt, lease_ms, stop, sink = value
    return JobContext(job_id, queue, attempt, attempt, lease_ms, stop, sink)

