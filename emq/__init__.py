"""emq: a Valkey-backed job engine in which cron and task queues are one thing, a job.

The public API, re-exported by name. Importing emq touches neither the server nor Django's
settings; both are read at call time (``emq.conf`` installs the settings reader first).
"""

from . import conf as _conf  # noqa: F401  (Django's settings become emq's before anything runs)
from .core.engine import Queue
from .core.events import Event, events
from .core.limits import apply_group_limits, set_group_limit
from .core.logical import JobRef, LogicalQueue, queue
from .core.records import Job
from .errors import (
    Cancelled,
    ConfigurationError,
    Discard,
    EmqError,
    JobNotFound,
    JobTimeout,
    NotDurable,
    NotRegistered,
    PayloadTooLarge,
    Retry,
    ServerFull,
    ServerUnavailable,
    SoftTimeLimit,
)
from .jobs import JobContext, JobFunction, cancel, current_job, get_job, job
from .jobs.canvas import BatchRef, Signature, batch, chain

__version__ = "0.2.0"  # the one place the version is written: the wheel's metadata reads it (pyproject.toml)

__all__ = [
    "BatchRef", "Cancelled", "ConfigurationError", "Discard", "EmqError", "Event", "Job", "JobContext", "JobFunction",
    "JobNotFound", "JobRef", "JobTimeout", "LogicalQueue", "NotDurable", "NotRegistered", "PayloadTooLarge", "Queue",
    "Retry", "ServerFull", "ServerUnavailable", "Signature", "SoftTimeLimit", "apply_group_limits", "batch", "cancel",
    "chain", "current_job", "events", "get_job", "job", "queue", "set_group_limit",
]
