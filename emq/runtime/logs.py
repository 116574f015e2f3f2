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
