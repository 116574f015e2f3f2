"""The jobs layer: ``@emq.job``, its options, the registry, and how a job is enqueued.

Above the core (which it uses to mint) and below the runtime (which looks jobs up here).
"""

from .byid import cancel, get_job, retry
from .context import Flag, JobContext, current_job
from .function import JobFunction, job
from .options import OPTION_NAMES, Options
from .registry import add_resolver, autodiscover, declared, lookup, registry
from .steps import signal

__all__ = [
    "OPTION_NAMES", "Flag", "JobContext", "JobFunction", "Options", "add_resolver", "autodiscover", "cancel",
    "current_job", "declared", "get_job", "job", "lookup", "registry", "retry", "signal",
]
