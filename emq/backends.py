"""``emq.backends.EmqBackend``, the name settings use in ``TASKS``: re-exported from ``emq.contrib.tasks``."""

from .contrib.tasks.backend import EmqBackend, EmqTask, register_task, resolve_task
from .contrib.tasks.compat import InvalidTask

__all__ = ["EmqBackend", "EmqTask", "InvalidTask", "register_task", "resolve_task"]
