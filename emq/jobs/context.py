"""What a ``takes_context`` job receives first: who it is, a handle on its own lease, whether it was
cancelled, where to report its progress, and its durable calls (``steps``, ``children``: steps that
run once, sleeps, signals, children); ``current_job()`` gives the same from anywhere in it.
"""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, TypeVar

from ..core.logical import JobRef, LogicalQueue
from ..core.records import Claimed
from . import children, secrets, steps

# The attempt running in this thread or coroutine, set by the worker around the job's function:
# (physical queue, the claimed job, stop flag, progress sink), or its JobContext (``JobContext.of_claim``).
current: ContextVar[Any] = ContextVar("emq_current_job", default=None)
T = TypeVar("T")


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
    ``progress`` leaves its value for the worker (None: nowhere, e.g. EMQ_EAGER). ``journal`` is the
    run's view of its durable calls (``steps.Journal``).
    """

    job_id: str
    queue: str
    attempt: int
    token: int
    lease_ms: int
    stop: Flag = field(default_factory=Flag, repr=False, compare=False)
    sink: Any = field(default=None, repr=False, compare=False)
    journal: steps.Journal = field(default_factory=steps.Journal, repr=False, compare=False)

    @classmethod
    def of_claim(cls, queue: str, job: Claimed, stop: Flag, sink: Any) -> JobContext:
        """A worker's attempt of a claimed job, whether its function takes it or asks ``current_job()``: its fence,
        whether its step results are sealed, its journal as its claim read it (``steps.Journal.seed``; a Claimed
        made by hand, never claimed, reads its own at its first durable call)."""
        ctx = cls(job.id, queue, job.attempt, job.token, job.lease_ms, stop, sink)
        ctx.journal.sealed = job.sealed
        if job.claimed_ms:
            ctx.journal.seed(job.journal, job.claimed_ms)
        return ctx

    @property
    def cancelled(self) -> bool:
        """True once the job was cancelled: stop soon (its outcome no longer counts)."""
        return self.stop.is_set()

    def extend_lock(self, ms: int | None = None) -> bool:
        """Renew this job's lease for ms (default: its lease length); False once it is lost or cancelled."""
        status = LogicalQueue(self.queue).extend_locks([(self.job_id, self.token)], ms or self.lease_ms)[0]
        if status == "cancelled":
            self.stop.set()
        return status == "ok"

    def progress(self, fraction: float, note: str = "") -> None:
        """Report how far the job is, 0.0 to 1.0, with an optional note; call it as often as you like.

        The worker stores the latest value with its next lease renewal, at most once a second
        (``get_job(...).progress``), so a call costs a few hundred nanoseconds and no round trip;
        the last value reported before the job returns is stored just before its finish. The note keeps
        its first 1,000 characters; when it is stored, the value of a ``password=…`` or any other pair
        whose name EMQ_MASK matches is masked (``secrets``).
        """
        if not 0.0 <= fraction <= 1.0:
            raise ValueError(f"progress of job {self.job_id} must be a fraction from 0.0 to 1.0, not {fraction!r}")
        sink = self.sink
        if sink is not None:
            sink.progress = (fraction, secrets.cut(note))
            if not sink.progress_dirty:
                sink.progress_dirty = True
                sink.nudge()


    def step(self, name: str, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
        """Call ``fn(*args, **kwargs)`` once for this job: its JSON result is kept on the job, and every
        later run (a retry, after a sleep or a signal, after its worker died) returns it without calling fn.

        Written under this attempt's fencing token: a stale attempt's step raises ``LeaseExpired``. A step
        that raises fails the attempt as usual; the steps before it stay done. Each name once a run.
        """
        return steps.step(self, name, fn, args, kwargs)

    async def step_async(self, name: str, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
        """``step`` for an ``async def`` job: fn may be a coroutine function; the round trips leave the loop free."""
        return await steps.step_async(self, name, fn, args, kwargs)

    def sleep(self, seconds: float | timedelta) -> None:
        """End this run now and run the job again after seconds (the server's clock); no attempt spent.

        The slot is freed meanwhile. In the run after, this sleep returns at once: its wake time is kept.
        """
        steps.sleep(self, seconds)

    def sleep_until(self, when: datetime) -> None:
        """``sleep`` until an aware datetime (returns at once once it has passed)."""
        steps.sleep_until(self, when)

    def wait_for(self, name: str, timeout: float | timedelta | None = None) -> Any:
        """The payload of signal ``name`` (``emq.signal``), sent before this call or after; None once
        timeout seconds passed without it. Until then the run ends and the job waits, its slot freed."""
        return steps.wait_for(self, name, timeout)

    def spawn(self, target: Any, /, *args: Any, **kwargs: Any) -> JobRef:
        """Enqueue a child job (``job`` with its arguments, or a signature ``job.s(...)``) once for this
        job; ``wait_children`` waits for it. A later run returns the same child, minting nothing."""
        return children.spawn(self, target, args, kwargs)

    def wait_children(self) -> list[Any]:
        """The results of the children spawned since the last wait, in spawn order; while one runs, this run
        ends and the job waits (slot freed, no attempt spent). A child that did not complete raises ChildFailed."""
        return children.wait_children(self)


def current_job() -> JobContext | None:
    """The attempt running in this thread or coroutine (None outside a job run by a worker)."""
    value = current.get()
    if value is None or isinstance(value, JobContext):
        return value
    ctx = JobContext.of_claim(*value)
    current.set(ctx)  # the same context (its journal) for the rest of the attempt; the worker resets it
    return ctx

