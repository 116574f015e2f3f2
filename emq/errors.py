"""Exceptions emq raises, each saying what went wrong and what to do."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


class EmqError(Exception):
    """Base of every error emq raises on purpose."""


class ServerUnavailable(EmqError):
    """The Valkey/Redis server could not be reached, or refuses work for now (loading, read-only, busy).

    ``state`` names which (``emq.core.faults.STATES``); workers and Pumps wait it out by themselves.
    """

    def __init__(self, message: str = "", state: str = "unreachable") -> None:
        super().__init__(message)
        self.state = state


class ServerFull(ServerUnavailable):
    """The server is at ``maxmemory`` and refuses writes (OOM): raise maxmemory, or drain or trim jobs."""

    def __init__(self, message: str = "", state: str = "full") -> None:
        super().__init__(message, state)


class NotRegistered(EmqError, LookupError):
    """A job name that no ``@emq.job`` registered."""


class JobNotFound(EmqError, LookupError):
    """No job with this id exists in the queue (never minted, or trimmed after its retention)."""


class AmbiguousJobId(EmqError, LookupError):
    """Jobs of one id are in several queues (a caller's ``job_id`` reused): name the queue you mean.

    ``queues`` are their names. Only an id a caller chose can be reused; a generated one names its queue.
    """

    def __init__(self, job_id: str, queues: Sequence[str] = ()) -> None:
        self.job_id, self.queues = job_id, list(queues)
        super().__init__(
            f"job id {job_id!r} is in {len(self.queues)} queues ({', '.join(self.queues)}): a job_id reused in "
            "several queues; name the one you mean (queue= in Python, --queue on the command line, "
            "?queue= in the HTTP API)"
        )

    def __reduce__(self) -> tuple[Any, ...]:
        return type(self), (self.job_id, self.queues)


class PayloadTooLarge(EmqError, ValueError):
    """A job's encoded arguments are over ``EMQ_MAX_PAYLOAD`` bytes."""


class ConfigurationError(EmqError):
    """A setting or option has a value emq cannot use."""


class NotDurable(EmqError):
    """EMQ_DURABLE is set and the server did not confirm an enqueue's jobs on disk or on a replica in time."""


class LeaseExpired(EmqError):
    """A job's lease ran out before it finished (its worker died or stalled); the sweep reclaimed it."""


class JobTimeout(EmqError):
    """An attempt ran past its time limit (``timeout``); raised inside the job, recorded as its failure."""

    def __str__(self) -> str:
        return super().__str__() or "the attempt ran past its time limit"


class SoftTimeLimit(EmqError):
    """An attempt reached its ``soft_timeout``: raised inside the job first, so it may clean up and stop."""

    def __str__(self) -> str:
        return super().__str__() or "the attempt reached its soft time limit"


class Cancelled(EmqError):
    """The job was cancelled (``emq.cancel``) while it ran; raised inside it, its outcome is discarded."""

    def __str__(self) -> str:
        return super().__str__() or "the job was cancelled"


class Discard(EmqError):
    """Raise in a job to end it dead at once, without retries; the message is kept as the reason."""


class Retry(EmqError):
    """Raise in a job to retry it after ``delay`` seconds (None: its backoff); it counts as an attempt."""

    def __init__(self, delay: float | None = None, message: str = "") -> None:
        seconds = delay.total_seconds() if hasattr(delay, "total_seconds") else delay
        if seconds is not None and float(seconds) < 0:
            raise ValueError(f"Retry(delay=...) must be >= 0 seconds, not {delay!r}")
        self.delay = None if seconds is None else float(seconds)
        super().__init__(message or ("retry requested" if self.delay is None else f"retry in {self.delay:g} s"))


class RateLimited(EmqError):
    """Raise in a job (after an HTTP 429) to put it back without spending an attempt and hold its whole
    group for ``retry_in`` seconds: no job of that group starts until then, other groups go on."""

    def __init__(self, retry_in: float = 1.0, message: str = "") -> None:
        seconds = retry_in.total_seconds() if hasattr(retry_in, "total_seconds") else retry_in
        if not float(seconds) > 0:
            raise ValueError(f"RateLimited(retry_in=...) must be > 0 seconds, not {retry_in!r}")
        self.retry_in = float(seconds)
        super().__init__(message or f"rate limited: retry in {self.retry_in:g} s")


class ChildFailed(EmqError):
    """A child a durable job spawned (``ctx.spawn``) did not complete: raised by ``ctx.wait_children``.

    ``children`` lists (id, state, reason) of each such child; the parent's attempt fails as on any error.
    """

    def __init__(self, children: list[tuple[str, str, str]]) -> None:
        self.children = list(children)
        cid, state, reason = self.children[0]
        more = f" (and {len(self.children) - 1} more)" if len(self.children) > 1 else ""
        super().__init__(f"child job {cid} ended {state}{': ' + reason if reason else ''}{more}")


class QuotaExceeded(EmqError):
    """An enqueue found its group (or its whole queue) at its quota of jobs not yet finished
    (``emq.set_quota``, ``EMQ_QUOTAS``): nothing was written for the jobs refused.

    ``queue``, ``group`` (None: the queue's own quota) and ``quota`` name the quota; ``minted`` is how many
    jobs of the call were minted before or beside the refused ones, and ``refs`` their references
    (an ``enqueue_many`` mints what fits)."""

    def __init__(self, queue: str, group: str | None, quota: int, minted: int = 0, refused: int = 1,
                 refs: list | None = None) -> None:
        self.queue, self.group, self.quota, self.minted, self.refs = queue, group, quota, minted, refs or []
        whose = f"group {group!r} of queue {queue!r}" if group is not None else f"queue {queue!r}"
        super().__init__(
            f"{whose} is at its quota of {quota} jobs not yet finished: {refused} job(s) refused, {minted} minted. "
            "Room returns as its jobs complete, die or are cancelled; raise it with emq.set_quota() or EMQ_QUOTAS."
        )
