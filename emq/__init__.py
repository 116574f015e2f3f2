"""emq: a Valkey-backed job engine in which cron and task queues are one thing, a job.

Importing emq touches neither the server nor Django's settings; both are read at call time.
"""

from .api import *  # noqa: F401,F403
from .api import __all__  # noqa: F401
