"""Log lines a batch at a time: what ``Logger.handle`` does for each record, for less than a record costs.

The worker's loop writes a line per completed job (``report.say``). ``handle_all`` takes a batch of
records and writes the lines meant for a plain ``StreamHandler`` in one write. ``handle_alike``
takes lines that differ only in their arguments and job fields (copies of one template record), and
for a plain ``StreamHandler`` whose stock ``Formatter`` uses those fields as plain ``%(name)s``,
formats the template once and fills each line in: no record is made for it at all. Any other
handler (a subclass, JSON lines, a filter of the project's own) gets real records, one by one.
"""

from __future__ import annotations

import logging
import re
import weakref
from collections.abc import Sequence

from .logs import FIELDS, JobContextFilter

# A row of handle_alike: the record's args, and its (job_id, job_name, queue, attempt).
Row = tuple[tuple, tuple]
# The attributes that differ between the lines of one handle_alike batch, in a row's format order.
VARYING = ("message", *FIELDS)
_FIELD = re.compile(r"%\((\w+)\)([#0+ -]*(?:\*|\d+)?(?:\.(?:\*|\d+))?[diouxefgcrsa%])", re.I)
_MARK = re.compile("\x00([0-9])\x00")
_PLAIN = re.compile("(%[s%])")
_ASCTIME = "\x00asctime\x00"  # where a line's time goes: made once a batch, the rest of the line kept
_CLOCK = ("created", "msecs", "relativeCreated")  # a template's fields that differ from one batch to the next
# A template's line: a str.format over a row, and how many args its message takes (None: formatted with %).
Line = tuple[str, int | None]
_kept: weakref.WeakKeyDictionary[logging.Handler, tuple[tuple, Line | None]] = weakref.WeakKeyDictionary()


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
    """``handle_all`` of copies of template, each with a row's args and job fields, made only if needed.
    As with ``Logger.info(msg, *args)``, each row's args are the message's: more than it takes are not
    reported, here, as a record's would be."""
    if logger.disabled or not rows:
        return
    handlers, found = _chain(logger, template.levelno)
    if logger.filters or not found:
        handle_all(logger, alike(template, rows))
        return
    records = None
    for handler in handlers:
        line = _line(handler, template) if type(handler) is logging.StreamHandler else None
        text = None if line is None else _fill(line, handler, template, rows)
        if text is not None:
            _write(handler, text, template)
            continue
        records = records or alike(template, rows)
        _hand(handler, records)


def alike(template: logging.LogRecord, rows: Sequence[Row]) -> list[logging.LogRecord]:
    """The records of rows: copies of template (no LogRecord set-up a line: it is the same for all)."""
    base, records = template.__dict__, []
    for args, job in rows:
        record = object.__new__(logging.LogRecord)
        values = record.__dict__
        values.update(base)
        values["args"] = args
        values.update(zip(FIELDS, job, strict=True))
        records.append(record)
    return records


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


def _line(handler: logging.StreamHandler, template: logging.LogRecord) -> Line | None:
    """``_compile``, kept for the handler while its format, its filters and the template's kind stay
    the same: the worker writes a batch of alike lines a round trip, from the same place."""
    fmt = handler.formatter or logging._defaultFormatter  # type: ignore[attr-defined]
    key = (fmt, fmt._style._fmt, fmt.datefmt, handler.terminator, tuple(handler.filters), template.msg,
           template.name, template.levelno, template.pathname, template.lineno, template.funcName,
           template.thread, template.threadName, template.process, template.processName,
           getattr(template, "taskName", None))
    kept = _kept.get(handler)
    if kept is not None and kept[0] == key:
        return kept[1]
    line, stable = _compile(handler, fmt, template)
    if stable:
        _kept[handler] = (key, line)
    return line


def _compile(handler: logging.StreamHandler, fmt: logging.Formatter, template: logging.LogRecord,
             ) -> tuple[Line | None, bool]:
    """The template's line as a ``str.format`` over a row (``VARYING``, then its args when the message
    has plain ``%s`` only: how many), asctime marked; None when the handler must see records (a filter
    other than ours, a formatter other than the stock one, a varying field used other than as plain
    ``%(name)s``, the args in the line). Stable: the same for every template of the same kind."""
    if (any(type(f) is not JobContextFilter for f in handler.filters) or type(fmt) is not logging.Formatter
            or type(fmt._style) is not logging.PercentStyle or template.exc_info or template.stack_info):
        return None, False
    used = _FIELD.findall(fmt._style._fmt)
    if any(name == "args" or (name in (*VARYING, "asctime") and spec != "s") for name, spec in used):
        return None, False
    values = {**(fmt._style._defaults or {}), **template.__dict__}
    values.update({name: f"\x00{i}\x00" for i, name in enumerate((*VARYING, "asctime"))})
    parts = _MARK.split(fmt._style._fmt % values + handler.terminator)
    message = _message(str(template.msg))
    out = []
    for i, part in enumerate(parts):
        if i % 2 == 0:
            out.append(_braced(part))
        elif part == "0" and message is not None:
            out.append(message[0])
        else:
            out.append(_ASCTIME if part == str(len(VARYING)) else "{" + part + "}")
    stable = not fmt._style._defaults and not any(name in _CLOCK for name, _ in used)
    return ("".join(out), None if message is None else message[1]), stable


def _fill(line: Line, handler: logging.StreamHandler, template: logging.LogRecord, rows: Sequence[Row]) -> str | None:
    """The rows' lines, one ``str.format`` a line; None when a row has too few args for its message."""
    text, n = line
    if _ASCTIME in text:
        fmt = handler.formatter or logging._defaultFormatter  # type: ignore[attr-defined]
        text = text.replace(_ASCTIME, _braced(fmt.formatTime(template, fmt.datefmt)))
    if n is None:
        msg = str(template.msg)
        return "".join([text.format(msg % args if args else msg, *job) for args, job in rows])
    try:  # rows with fewer args than the message takes are left to records (logging reports them)
        return "".join([text.format(None, *job, *args) for args, job in rows])
    except IndexError:
        return None


def _message(msg: str) -> tuple[str, int] | None:
    """msg as a ``str.format`` over the args (after the ``VARYING`` ones) and how many it takes; None
    unless its only conversions are ``%s`` (and ``%%``)."""
    tokens, out, n = _PLAIN.split(msg), [], len(VARYING)
    for i, token in enumerate(tokens):
        if i % 2 == 0:
            if "%" in token:
                return None
            out.append(_braced(token))
        else:
            out.append("%" if token == "%%" else f"{{{n}}}")
            n += token == "%s"
    return "".join(out), n - len(VARYING)


def _braced(text: str) -> str:
    return text.replace("{", "{{").replace("}", "}}")


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
