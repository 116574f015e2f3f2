"""The jobs layer: ``@emq.job``, its options, the registry, and how a job is enqueued.

Above the core (which it uses to mint) and below the runtime (which looks jobs up here).
"""

from .context import Flag, JobContext, current_job
from .function import JobFunction, cancel, get_job, job
from .options import OPTION_NAMES, Options
from .registry import add_resolver, autodiscover, declared, lookup, registry

__all__ = [
    "OPTION_NAMES", "Flag", "JobContext", "JobFunction", "Options", "add_resolver", "autodiscover", "cancel",
    "current_job", "declared", "get_job", "job", "lookup", "registry",
]
