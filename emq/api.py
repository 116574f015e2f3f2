"""The public API, re-exported lazily by ``emq/__init__.py``."""

from __future__ import annotations

from . import conf
from .engine import Queue
from .errors import (
    ConfigurationError,
    EmqError,
    JobNotFound,
    NotRegistered,
    PayloadTooLarge,
    ServerUnavailable,
)
from .jobs import JobFunction, get_job, job
from .records import Job, JobRef


def queue(name: str | None = None) -> Queue:
    """The queue of that name (default: EMQ_DEFAULT_QUEUE) for lease and admin operations."""
    return Queue(name or conf.get("EMQ_DEFAULT_QUEUE"))


def set_group_limit(queue_name: str, group: str, limit: int | None) -> None:
    """Cap the active jobs of one group in one queue; None lifts the cap."""
    Queue(queue_name).set_group_limit(group, limit)


__all__ = [
    "ConfigurationError", "EmqError", "Job", "JobFunction", "JobNotFound", "JobRef", "NotRegistered",
    "PayloadTooLarge", "Queue", "ServerUnavailable", "get_job", "job", "queue", "set_group_limit",
]
