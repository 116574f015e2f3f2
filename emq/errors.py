"""Exceptions emq raises, each saying what went wrong and what to do."""

from __future__ import annotations


class EmqError(Exception):
    """Base of every error emq raises on purpose."""


class ServerUnavailable(EmqError):
    """The Valkey/Redis server could not be reached."""


class NotRegistered(EmqError, LookupError):
    """A job name that no ``@emq.job`` registered."""


class JobNotFound(EmqError, LookupError):
    """No job with this id exists in the queue (never minted, or trimmed after its retention)."""


class PayloadTooLarge(EmqError, ValueError):
    """A job's encoded arguments are over ``EMQ_MAX_PAYLOAD`` bytes."""


class ConfigurationError(EmqError):
    """A setting or option has a value emq cannot use."""


class LeaseExpired(EmqError):
    """A job's lease ran out before it finished (its worker died or stalled); the sweep reclaimed it."""
