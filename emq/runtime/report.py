"""What the worker says: about finished attempts (a log line each, the ``job_finished`` signal), and on stop.

Both come after the server recorded the batch, with the state its finish script decided; the
completed lines later, many at a time (``say``, when ``rounds.say_soon`` or a wait of the loop calls it).
"""

from __future__ import annotations

import logging
import time

from ..core import config
from ..core.records import Claimed, Outcome
from . import outcomes, signals
from .held import Held
from .loglines import Row, handle_alike
from .logs import fields

log = logging.getLogger("emq.worker")
COMPLETED = "job id=%s name=%s state=completed attempt=%s ms=%s"


# Completed lines held back until a next round trip is on the wire (``rounds.say_soon``), as ``loglines.Row``s:
# the line's args (id, name, attempt, ms it ran) and job fields, strings and numbers only (a held Claimed would
# keep its job's objects alive until the write, for the cyclic GC to walk and promote: 4x its collections).
Unsaid = list[Row]


def finished(queue: str, done: list[tuple[Held, Outcome]], states: list[str], unsaid: Unsaid) -> None:
    """Log each attempt the server settled (by the state it decided) and tell the receivers.

    A completed attempt's line goes to ``unsaid``: ``say`` writes it while a later round trip is on
    the wire, so the server's time hides the line's (the loop thread writes one a job). The other
    lines and the signals go at once: a retried attempt's ``job_finished`` comes before its next start.
    """
    # Decided once a batch: a silenced line (EMQ_LOG_COMPLETED = False, or INFO off) costs nothing.
    completed = config.get("EMQ_LOG_COMPLETED") and log.isEnabledFor(logging.INFO)
    receivers = bool(signals.job_finished.receivers)
    now = time.monotonic()
    for (held, o), state in zip(done, states, strict=True):
        if state == "completed":
            if completed:
                job = held.job
                unsaid.append(((job.id, job.name, job.token, int((now - held.started) * 1000)),
                               (job.id, job.name, queue, job.token)))
            if not receivers:
                continue
        seconds = now - held.started
        if state != "completed":
            _warn(queue, held.job, o, state, int(seconds * 1000))
        if receivers:
            signals.job_finished.send(
                None, queue=queue, job=held.job, attempt=held.job.token, state=state,
                outcome=outcomes.name(state, o), duration=seconds, exception=o.exc, record=o,
            )


def say(unsaid: Unsaid) -> bool:
    """Write the completed lines held back, and forget them; whether there were any.

    The lines differ only in their arguments and job fields, so they go as one template record and a
    row each (``loglines.handle_alike``): each line's record is a copy of the template's attributes, so
    the logger's search of the caller's frame and LogRecord's own set-up (source path, thread, process,
    time) are made once a batch, not once a line; a plain stream handler gets the lines in one write,
    made from one formatted frame around each message (no record a line).
    """
    if not unsaid:
        return False
    template = logging.LogRecord(log.name, logging.INFO, __file__, 0, COMPLETED, None, None)
    rows = unsaid.copy()
    unsaid.clear()
    handle_alike(log, template, rows)
    return True


def _warn(queue: str, job: Claimed, o: Outcome, state: str, ms: int) -> None:
    if state in ("stale", "missing"):
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
