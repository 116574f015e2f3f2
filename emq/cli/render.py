"""How ``manage.py emq`` shows things: aligned tables, JSON, ages, a progress bar, a question.

Everything it prints passes ``printable`` first: a job's group, id, arguments, error or progress
note is data anyone who can enqueue chose, and an escape sequence in it would otherwise retitle,
clear or recolour the operator's terminal. Also the small parsers its options share (durations
like ``7d`` or ``1h30m``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from datetime import date, datetime
from typing import Any

from ..errors import ConfigurationError
from .registry import IO, Result

UNITS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
PROGRESS_OVER = 1000  # jobs: bulk operations on more than this show a progress bar
# What a terminal would act on rather than show: C0 and C1 controls, DEL, and the marks that reorder
# or break lines (bidirectional overrides and isolates, the line and paragraph separators).
CONTROLS = re.compile(r"[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def printable(text: str) -> str:
    """Text fit for a terminal: each control character shown as its escape (``\\x1b``, ``\\n``, ``\\u202e``)."""
    if text.isprintable():  # the common case, and a cheap test
        return text
    return CONTROLS.sub(_escaped, text)


def _escaped(match: re.Match) -> str:
    ch = match.group()
    return NAMED.get(ch) or (f"\\x{ord(ch):02x}" if ord(ch) < 0x100 else f"\\u{ord(ch):04x}")


def json_text(data: Any) -> str:
    """Data as one line of JSON that a terminal shows as it is: json.dumps escapes C0 controls, and
    the rest of CONTROLS (DEL, C1, bidirectional marks) become \\u escapes, the same JSON."""
    text = json.dumps(data, default=_json_default, ensure_ascii=False)
    return CONTROLS.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def duration(text: str) -> float:
    """Seconds in ``90``, ``30s``, ``10m``, ``1h30m``, ``7d`` or ``2w``."""
    parts = re.findall(r"(\d+(?:\.\d+)?)\s*(ms|s|m|h|d|w)?", text.strip().lower())
    if not parts or re.sub(r"(\d+(?:\.\d+)?)\s*(ms|s|m|h|d|w)?", "", text.strip().lower()).strip():
        raise ConfigurationError(f"{text!r} is not a duration: use e.g. 30s, 10m, 1h30m, 7d")
    return sum(float(n) * UNITS[u or "s"] for n, u in parts)


def age(ms: int | None) -> str:
    """A length of time in words: "850 ms", "12 s", "3 min", "2 h", "4 d"; "—" for none."""
    if ms is None:
        return "—"
    for unit, size in (("d", 86_400_000), ("h", 3_600_000), ("min", 60_000), ("s", 1000)):
        if abs(ms) >= size:
            return f"{int(ms // size)} {unit}"
    return f"{int(ms)} ms"


def table(rows: Sequence[dict[str, Any]]) -> list[str]:
    """Rows as lines of aligned columns under a header (numbers right-aligned)."""
    if not rows:
        return []
    columns = list(rows[0])
    cells = [[_cell(r.get(c)) for c in columns] for r in rows]
    widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(columns)]
    numeric = [all(isinstance(r.get(c), int | float) for r in rows) for c in columns]

    def line(values: list[str]) -> str:
        cells = (v.rjust(w) if n else v.ljust(w) for v, w, n in zip(values, widths, numeric, strict=True))
        return "  ".join(cells).rstrip()

    return [line([c.upper() for c in columns]), *(line(row) for row in cells)]


def _cell(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:g}"
    return printable(str(value))


def show(result: Result, io: IO, as_json: bool) -> None:
    """Print a result: its data as JSON, or its table and lines."""
    if as_json:
        io.out.write(json_text(result.data) + "\n")
        return
    for line in (table(result.rows) if result.rows is not None else []) + result.lines:
        io.out.write(printable(line) + "\n")
    if result.rows == [] and not result.lines:
        io.out.write("(none)\n")


def _json_default(value: Any) -> Any:
    if isinstance(value, datetime | date):
        return value.isoformat()
    raise TypeError(f"{type(value).__name__} is not JSON")


class Progress:
    """A one-line bar on stderr for a bulk operation over more than PROGRESS_OVER jobs."""

    def __init__(self, io: IO, label: str, total: int) -> None:
        self.io, self.label, self.total, self.done = io, label, total, 0
        self.shown = total > PROGRESS_OVER

    def advance(self, n: int) -> None:
        self.done += n
        if self.shown:
            filled = int(30 * min(self.done / self.total, 1.0))
            bar = f"[{'#' * filled}{'.' * (30 - filled)}]"
            self.io.err.write(f"\r{printable(self.label)} {bar} {self.done:,}/{self.total:,}")
            self.io.err.flush()

    def close(self) -> None:
        if self.shown:
            self.io.err.write("\n")


def confirm(io: IO, question: str, yes: bool) -> bool:
    """Ask a yes/no question on the terminal; --yes answers it; without a terminal it is refused."""
    if yes:
        return True
    if not io.stdin.isatty():
        raise ConfigurationError(f"{question} Refused: no terminal to ask on; pass --yes to confirm.")
    io.err.write(f"{printable(question)} [y/N] ")
    io.err.flush()
    return io.stdin.readline().strip().lower() in ("y", "yes")
