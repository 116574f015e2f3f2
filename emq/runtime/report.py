"""What the worker says: about finished attempts (a log line each, the ``job_finished`` signal), and on stop.

Both come after the server recorded the batch, with the state its finish script decided; the
completed lines later, many at a time (``say``, when ``Rounds._say_soon`` or a wait of the loop calls it).
"""

from __future__ import annotations

import logging
import time

from ..core import config, sealed
from ..core.records import Claimed, Outcome
from . import outcomes, signals
from .held import Held
from .loglines import Row, handle_alike
from .logs import fields

log = logging.getLogger("emq.worker")
COMPLETED = "job id=%s name=%s state=completed attempt=%s ms=%s"


# Completed lines held back until a next round trip is on the wire (``Rounds._say_soon``), as ``loglines.Row``s:
# the line's args (id, name, attempt, ms it ran) and job fields, strings and numbers only (a held Claimed would
# keep its job's objects alive until the write, for the cyclic GC to walk and promote: many more collections).
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
                attempt = job.token - job.spared  # job.attempt, inline: every completed job's path
                unsaid.append(((job.id, job.name, attempt, int((now - held.started) * 1000)),
                               (job.id, job.name, queue, attempt)))
            if not receivers:
                continue
        seconds = now - held.started
        if state != "completed":
            _warn(queue, held.job, o, state, int(seconds * 1000))
        if receivers:
            signals.job_finished.send(
                None, queue=queue, job=held.job, attempt=held.job.attempt, state=state,
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
    if o.outcome == "suspended" and state in outcomes.SUSPENDED:  # a durable job slept or waits: no warning
        log.info("job id=%s name=%s state=%s attempt=%s ms=%s suspended=%s", job.id, job.name, state, job.attempt, ms,
                 outcomes.suspension(o.value), extra=fields(job.id, job.name, queue, job.attempt))
    elif state in ("stale", "missing"):
        log.warning("job id=%s name=%s state=%s attempt=%s ms=%s", job.id, job.name, state, job.attempt, ms,
                    extra=fields(job.id, job.name, queue, job.attempt))
    elif o.outcome == "unknown" and state in outcomes.RETRIED:
        _unknown(queue, job, state)
    else:
        line = (o.value.split("|", 1)[1] if o.outcome == "unknown" else o.value).split("\n", 1)[0]
        if sealed.is_sealed(line):  # an encrypted job's error: its type only, the text may quote its arguments
            line = f"{type(o.exc).__name__ if o.exc else 'error'} (its text is stored encrypted)"
        log.warning("job id=%s name=%s state=%s attempt=%s ms=%s error=%s", job.id, job.name, state, job.attempt, ms,
                    line, extra=fields(job.id, job.name, queue, job.attempt))


# When this worker last said it held a job of a name it does not know, by name: a rolling deploy
# may hold thousands of jobs of one new name, and one line a minute says it.
_unknown_said: dict[str, float] = {}
UNKNOWN_EVERY = 60.0


def _unknown(queue: str, job: Claimed, state: str) -> None:
    now = time.monotonic()
    if now - _unknown_said.get(job.name, -UNKNOWN_EVERY) < UNKNOWN_EVERY:
        return
    _unknown_said[job.name] = now
    log.warning("job id=%s name=%s state=%s: this worker does not know the name; the job waits, no attempt "
                "spent, for a worker that does (dead after EMQ_UNKNOWN_GRACE); said once a minute a name",
                job.id, job.name, state, extra=fields(job.id, job.name, queue, job.attempt))


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
