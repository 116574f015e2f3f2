"""emq: a Valkey-backed job engine in which cron and task queues are one thing, a job.

The public API, re-exported by name. Importing emq touches neither the server nor Django's
settings; both are read at call time (``emq.conf`` installs the settings reader first).
"""

from . import conf as _conf  # noqa: F401  (Django's settings become emq's before anything runs)
from .core.events import Event, events
from .core.limits import apply_group_limits, set_group_limit
from .core.logical import JobRef, LogicalQueue, queue
from .core.logical import LogicalQueue as Queue  # the queue users name; LogicalQueue stays its other name
from .core.quotas import apply_quotas, quotas, set_quota
from .core.rates import apply_rate_limits, rate_limits, remove_rate_limit, set_rate_limit
from .core.records import Job
from .errors import (
    AmbiguousJobId,
    Cancelled,
    ChildFailed,
    ConfigurationError,
    Discard,
    EmqError,
    JobNotFound,
    JobTimeout,
    NotDurable,
    NotRegistered,
    PayloadTooLarge,
    QuotaExceeded,
    RateLimited,
    Retry,
    ServerFull,
    ServerUnavailable,
    SoftTimeLimit,
)
from .jobs import JobContext, JobFunction, cancel, current_job, get_job, job, retry, signal
from .jobs.canvas import BatchRef, Signature, batch, cancel_flow, chain, chord

__version__ = "0.2.0"  # the one place the version is written: the wheel's metadata reads it (pyproject.toml)

__all__ = [
    "AmbiguousJobId", "BatchRef", "Cancelled", "ChildFailed", "ConfigurationError", "Discard", "EmqError", "Event",
    "Job", "JobContext", "JobFunction", "JobNotFound", "JobRef", "JobTimeout", "LogicalQueue", "NotDurable",
    "NotRegistered", "PayloadTooLarge", "Queue", "QuotaExceeded", "RateLimited", "Retry", "ServerFull",
    "ServerUnavailable", "Signature", "SoftTimeLimit", "apply_group_limits", "apply_quotas", "apply_rate_limits",
    "batch", "cancel", "cancel_flow", "chain", "chord", "current_job", "events", "get_job", "job", "queue", "quotas",
    "rate_limits", "remove_rate_limit", "retry", "set_group_limit", "set_quota", "set_rate_limit", "signal",
]
