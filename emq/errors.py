"""Exceptions emq raises, each saying what went wrong and what to do."""

from __future__ import annotations


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
