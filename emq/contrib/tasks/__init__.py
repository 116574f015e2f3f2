"""emq as a backend for Django's Tasks framework: ``emq.contrib.tasks.backend.EmqBackend``.

``install()`` (called by the app's ``ready``) plugs the adapter into emq: the job registry can
then find a Task by its module path, and ``task_finished`` follows each task's final outcome.
"""

from __future__ import annotations


def install() -> None:
    """Let workers find Tasks by module path (ImportError without the Tasks framework).

    ``task_finished`` follows from emq's ``job_finished`` once a Task is registered in this
    process (``backend.register_task``): a worker that runs no Task pays nothing per job.
    """
    from ...jobs import add_resolver
    from . import backend

    add_resolver(backend.resolve_task)
