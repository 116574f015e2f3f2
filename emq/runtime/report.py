"""What the worker says: about finished attempts (a log line each, the ``job_finished`` signal), and on stop.

Both come after the server recorded the batch, with the state its finish script decided.
"""

from __future__ import annotations

import logging
import time

from ..core import config
from ..core.records import Outcome
from . import outcomes, signals
from .held import Held
from .logs import fields

log = logging.getLogger("emq.worker")
COMPLETED = "job id=%s name=%s state=completed attempt=%s ms=%s"


def finished(queue: str, done: list[tuple[Held, Outcome]], states: list[str]) -> None:
    """Log each attempt the server settled (by the state it decided) and tell the receivers."""
    # Decided once a batch: at 20,000+ jobs/s a line per success is the loop thread's largest cost
    # after the round trip, so a silenced one (EMQ_LOG_COMPLETED = False, or INFO off) costs nothing.
    completed = config.get("EMQ_LOG_COMPLETED") and log.isEnabledFor(logging.INFO)
    receivers = bool(signals.job_finished.receivers)
    now = time.monotonic()
    for (held, o), state in zip(done, states, strict=True):
        if state == "completed" and not completed and not receivers:
            continue
        seconds = now - held.started
        _log(queue, held, o, state, seconds, completed)
        if receivers:
            signals.job_finished.send(
                None, queue=queue, job=held.job, attempt=held.job.token, state=state,
                outcome=outcomes.name(state, o), duration=seconds, exception=o.exc, record=o,
            )


def _log(queue: str, held: Held, o: Outcome, state: str, seconds: float, completed: bool) -> None:
    job, ms = held.job, int(seconds * 1000)
    if state == "completed":
        if completed:
            # Built here rather than by log.info: the logger's search of the caller's frame is a third
            # of a line's cost, and the loop thread writes one line per job (~9 us instead of ~12).
            args = (job.id, job.name, job.token, ms)
            record = logging.LogRecord(log.name, logging.INFO, __file__, 0, COMPLETED, args, None)
            record.__dict__.update(fields(job.id, job.name, queue, job.token))
            log.handle(record)
    elif state in ("stale", "missing"):
        log.warning("job id=%s name=%s state=%s attempt=%s ms=%s", job.id, job.name, state, job.token, ms,
                    extra=fields(job.id, job.name, queue, job.token))
    else:
        line = o.value.split("\n", 1)[0]
        log.warning("job id=%s name=%s state=%s attempt=%s ms=%s error=%s", job.id, job.name, state, job.token, ms,
                    line, extra=fields(job.id, job.name, queue, job.token))


def stopping(asked: int, said: int, running: int, grace: float) -> int:
    """Say what each stop asked since the last said does (wait for the running jobs, then release them).

    Returns how many are said now. Called by the worker's loop, which knows how many jobs run.
    """
    jobs = "job" if running == 1 else "jobs"
    while said < asked:
        said += 1
        if said == 1:
            log.info("stopping: waiting for %s running %s (grace %g s)", running, jobs, grace)
        elif running:
            log.warning("releasing %s %s now", running, jobs)
    return said
