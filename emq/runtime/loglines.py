"""Log lines a batch at a time: what ``Logger.handle`` does for each record, for less than a record costs.

The worker's loop writes a line per completed job (``report.say``). ``handle_all`` takes a batch of
records and writes the lines meant for a plain ``StreamHandler`` in one write. ``handle_alike``
makes the batch's records as copies of one template record (LogRecord's own set-up, the caller's
frame, the time: once a batch, not once a line), each with its args and job fields. The stock
``Formatter`` formats each line; any other handler (a subclass, JSON lines) gets the records one by one.
A plain ``StreamHandler`` whose format shows none of what differs between the lines but the message
(emq's own: time, level, logger, message) gets its lines without a record each (``_lines``).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from .logs import JobContextFilter

# A row of handle_alike: the record's args, and its (job_id, job_name, queue, attempt).
Row = tuple[tuple, tuple]  # the job fields in logs.FIELDS order


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
    handlers, found = _chain(logger, records[0].levelno if records else 0)
    for handler in handlers if records else ():
        _hand(handler, records)
    if not found:  # no handler: the last resort's rules apply, record by record
        for record in records:
            logging.Logger.callHandlers(logger, record)


def handle_alike(logger: logging.Logger, template: logging.LogRecord, rows: Sequence[Row]) -> None:
    """``handle_all`` of copies of template, each with a row's args and job fields (``alike``); the
    records are made only for a handler that needs them (``_lines``: a plain one does not)."""
    if logger.disabled or not rows:
        return
    handlers, found = _chain(logger, template.levelno)
    if logger.filters or not found:  # the logger's filters see each record; the last resort's rules apply
        handle_all(logger, alike(template, rows))
        return
    records = None
    for handler in handlers:
        if (text := _lines(handler, template, rows)) is not None:
            _write(handler, text, template)
            continue
        if records is None:
            records = alike(template, rows)
        _hand(handler, records)


def alike(template: logging.LogRecord, rows: Sequence[Row]) -> list[logging.LogRecord]:
    """The records of rows: copies of template's attributes (LogRecord's set-up is the same for all, and
    a dict copy costs less than updating a new record's dict)."""
    base, records, new = template.__dict__, [], object.__new__
    for args, (job_id, job_name, queue, attempt) in rows:  # logs.FIELDS, in its order
        record = new(logging.LogRecord)
        record.__dict__ = values = base.copy()
        values["args"] = args
        values["job_id"], values["job_name"], values["queue"], values["attempt"] = job_id, job_name, queue, attempt
        records.append(record)
    return records


def _lines(handler: logging.Handler, template: logging.LogRecord, rows: Sequence[Row]) -> str | None:
    """The rows' lines as a stock ``StreamHandler`` with the stock ``Formatter`` writes their records, made
    from one formatted frame; None when a record each is needed (another handler, formatter or filter
    than ``JobContextFilter``, which passes a record that has the job fields, or a format that shows
    a field that differs between the lines other than the message: ``_frame``)."""
    if type(handler) is not logging.StreamHandler or any(type(f) is not JobContextFilter for f in handler.filters):
        return None
    fmt = handler.formatter or logging._defaultFormatter  # type: ignore[attr-defined]
    if type(fmt) is not logging.Formatter or (frame := _frame(fmt, template)) is None:
        return None
    head, tail = frame
    msg, tail = str(template.msg), tail + handler.terminator
    line = head.replace("%", "%%") + msg + tail.replace("%", "%%")  # a row's line in one % (no joins a line)
    return "".join([line % args if args else head + msg + tail for args, _ in rows])


_MARK = "\x00emq-message\x00"
# Two rows that differ in every field a line's record has of its own but its message.
_PROBES = (((0,), ("", "", "", 0)), ((1,), ("a", "b", "c", 1)))


def _frame(fmt: logging.Formatter, template: logging.LogRecord) -> tuple[str, str] | None:
    """The text around the message in each line fmt formats from template's copies (what ``Formatter.format``
    makes of a record without exception or stack), or None when it shows more than the message of them:
    two probe records that differ in args and job fields must format alike, the message once in each."""
    try:
        asctime = fmt.formatTime(template, fmt.datefmt) if fmt.usesTime() else None
        texts = set()
        for record in alike(template, _PROBES):
            record.message = _MARK
            if asctime is not None:
                record.asctime = asctime
            texts.add(fmt.formatMessage(record))
    except Exception:  # a format these probes cannot fill (a field of another type): a record each
        return None
    text = texts.pop()
    if texts or text.count(_MARK) != 1:
        return None
    head, tail = text.split(_MARK)
    return head, tail


def _chain(logger: logging.Logger, level: int) -> tuple[list[logging.Handler], bool]:
    """The handlers a record of this level reaches from logger (propagation, their levels); whether any exists."""
    out, found, node = [], False, logger
    while node is not None:
        for handler in node.handlers:
            found = True
            if level >= handler.level:
                out.append(handler)
        node = node.parent if node.propagate else None  # type: ignore[assignment]
    return out, found


def _hand(handler: logging.Handler, records: list[logging.LogRecord]) -> None:
    if type(handler) is logging.StreamHandler:
        _write_all(handler, records)
    else:
        for record in records:
            handler.handle(record)


def _write(handler: logging.StreamHandler, text: str, record: logging.LogRecord) -> None:
    try:
        with handler.lock:  # type: ignore[union-attr]
            handler.stream.write(text)
            handler.flush()
    except RecursionError:
        raise
    except Exception:
        handler.handleError(record)


def _write_all(handler: logging.StreamHandler, records: list[logging.LogRecord]) -> None:
    kept = [r for r in records if handler.filter(r)]
    if not kept:
        return
    try:
        text = _format_all(handler.formatter or logging.Formatter(), kept, handler.terminator)
    except RecursionError:
        raise
    except Exception:
        handler.handleError(kept[0])
        return
    _write(handler, text, kept[0])


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
