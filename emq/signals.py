"""The signals emq's worker sends about each attempt: ``job_started`` and ``job_finished``.

    from emq.signals import job_finished

    @receiver(job_finished)
    def count(sender, *, queue, job, outcome, duration, exception, **kwargs): ...

Both are sent once per attempt; ``job_finished`` only after the server recorded the outcome
(see ``emq.runtime.signals`` for every keyword argument).
"""

from .runtime.signals import job_finished, job_started

__all__ = ["job_finished", "job_started"]
