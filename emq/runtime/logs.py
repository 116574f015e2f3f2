"""Logs with job context: every record emitted while a job runs carries its id, name, queue and attempt.

A context variable holds the running attempt (set by ``observe`` in the job's own thread or
coroutine); ``JobContextFilter`` copies it onto each record a handler sees, so ``%(job_id)s`` works
in any formatter (empty outside a job). ``JsonFormatter`` writes one JSON object a line.
``setup()`` is what the commands call: it puts the filter on the handlers that are configured
(adding one on stderr when there is none) and, with ``EMQ_LOG_FORMAT = "json"``, the formatter.

In a project's ``LOGGING``: ``"filters": {"job": {"()": "emq.runtime.logs.JobContextFilter"}}``,
``"formatters": {"json": {"()": "emq.runtime.logs.JsonFormatter"}}``.
"""

from __future__ import annotations

import json
import logging
from contextvars import ContextVar
from datetime import UTC, datetime

from ..core import config
from ..errors import ConfigurationError

FIELDS = ("job_id", "job_name", "queue", "attempt")
NONE = ("", "", "", "")
TEXT = "%(asctime)s %(levelname)s %(name)s %(message)s"
FORMATS = ("text", "json")

# (job_id, job_name, queue, attempt) of the attempt running in this thread or coroutine.
current: ContextVar[tuple[str, str, str, int] | tuple[str, str, str, str]] = ContextVar("emq_job", default=NONE)


def fields(job_id: str, job_name: str, queue: str, attempt: int) -> dict[str, object]:
    """The job fields as ``extra=`` for a record logged outside the job's own thread (the loop's lines)."""
    return {"job_id": job_id, "job_name": job_name, "queue": queue, "attempt": attempt}


class JobContextFilter(logging.Filter):
    """Add job_id, job_name, queue and attempt to each record (values given by ``extra=`` win)."""

    def filter(self, record: logging.LogRecord) -> bool:
        fields = record.__dict__  # a record's attributes (cheaper than hasattr: the worker logs a line a job)
        if "job_id" not in fields or "job_name" not in fields or "queue" not in fields or "attempt" not in fields:
            for name, value in zip(FIELDS, current.get(), strict=True):
                fields.setdefault(name, value)
        return True


class JsonFormatter(logging.Formatter):
    """One JSON object a line: time (UTC, ISO 8601), level, logger, message, the job fields, exc."""

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, object] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        running = current.get()
        for name, value in zip(FIELDS, running, strict=True):
            value = getattr(record, name, value)
            if value not in ("", None):
                out[name] = value
        if record.exc_info:
            out["exc"] = self.formatException(record.exc_info)
        if record.stack_info:
            out["stack"] = self.formatStack(record.stack_info)
        return json.dumps(out, default=str, ensure_ascii=False)


def handle_all(logger: logging.Logger, records: list[logging.LogRecord]) -> None:
    """``logger.handle`` for each record, with the lines for a stock ``StreamHandler`` written at once.

    What ``Logger.handle`` does (the logger's filters, each handler up the propagation chain with its
    level and filters), except that a handler of exactly ``logging.StreamHandler`` gets the batch in
    one write and one flush under its lock: a line a job otherwise costs the worker's loop a write
    call each (most of a completed line's cost on a pipe). Any other handler gets each record in turn.
    """
    if logger.disabled or not records:
        return
    if logger.filters:
        records = [r for r in records if logger.filter(r)]
    found, level, node = 0, records[0].levelno if records else 0, logger
    while node is not None and records:
        for handler in node.handlers:
            found += 1
            if level < handler.level:
                continue
            if type(handler) is logging.StreamHandler:
                _write_all(handler, records)
            else:
                for record in records:
                    handler.handle(record)
        node = node.parent if node.propagate else None
    if not found:  # no handler: the last resort's rules apply, record by record
        for record in records:
            logging.Logger.callHandlers(logger, record)


def _write_all(handler: logging.StreamHandler, records: list[logging.LogRecord]) -> None:
    kept = [r for r in records if handler.filter(r)]
    if not kept:
        return
    try:
        text = _format_all(handler.formatter or logging.Formatter(), kept, handler.terminator)
        with handler.lock:  # type: ignore[union-attr]
            handler.stream.write(text)
            handler.flush()
    except RecursionError:
        raise
    except Exception:
        handler.handleError(kept[0])


def _format_all(fmt: logging.Formatter, records: list[logging.LogRecord], end: str) -> str:
    """The records' lines; the stock ``Formatter`` formats the time once (a batch shares its ``created``)."""
    created = records[0].created
    if type(fmt) is not logging.Formatter or any(r.exc_info or r.exc_text or r.stack_info or r.created != created
                                                 for r in records):
        return "".join(fmt.format(r) + end for r in records)
    asctime = fmt.formatTime(records[0], fmt.datefmt) if fmt.usesTime() else None
    out = []
    for r in records:
        r.message = r.getMessage()
        if asctime is not None:
            r.asctime = asctime
        out.append(fmt.formatMessage(r))
    return end.join(out) + end


def setup() -> None:
    """Give the configured handlers the job fields, and JSON lines when EMQ_LOG_FORMAT is "json"."""
    kind = config.get("EMQ_LOG_FORMAT")
    if kind not in FORMATS:
        raise ConfigurationError(f"EMQ_LOG_FORMAT must be one of {list(FORMATS)}, not {kind!r}")
    root, emq = logging.getLogger(), logging.getLogger("emq")
    handlers = list(dict.fromkeys(root.handlers + emq.handlers))
    if not handlers:  # nothing configured: emq's lines (INFO and up) go to stderr
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter(TEXT))
        emq.addHandler(handler)
        if emq.getEffectiveLevel() > logging.INFO:
            emq.setLevel(logging.INFO)
        handlers = [handler]
    for handler in handlers:
        if not any(isinstance(f, JobContextFilter) for f in handler.filters):
            handler.addFilter(JobContextFilter())
        if kind == "json":
            handler.setFormatter(JsonFormatter())
