"""Filtered slices of a queue's sets, from a cursor that survives changes to the set, and the dead letter
by error class: what the dashboard's filtered lists, the command line's ``jobs`` and every "all that
match" action read.

A set's slice is one call of ``sift.lua``: it reads at most ``budget`` entries of the set between the
filters' time bounds (its index: ``ZCOUNT``/``ZRANGE`` by rank, never the whole set) and keeps those that
pass on the server, so a filter on the error class or the arguments moves no error or argument over the
wire. Ready jobs sit in lists, not sets: ``lanes.LaneSift`` walks them. The cursor is text a page may put
in a URL; "" starts at the beginning, None in a reply means the end.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .. import classes, stored
from ..classes import ErrorClass
from ..connection import guard
from .base import Ops
from .filters import Filters, fold
from .reads import SETS, Entry

MAX_BUDGET = 5000  # entries one slice reads at most
MAX_WANT = 1000  # jobs one slice keeps at most
CALL_BUDGET = 500  # entries one call of sift.lua reads: a long slice is several short calls, so other
# clients (the workers' claims) run between them (docs/reference/performance.md has the cost)


@dataclass(frozen=True)
class Sifted:
    """A slice: the jobs kept (with the fields asked for), where the next slice starts (None: the end),
    how many entries were read, and how many lie in the time range now (the set's size without one)."""

    entries: list[Entry]
    cursor: str | None
    read: int
    in_range: int


class SiftOps(Ops):
    """Filtered slices of one physical queue's sets; ``Queue`` inherits these."""

    def sift(self, of: str, filters: Filters, cursor: str = "", *, budget: int = 2000, want: int = 50,
             fields: Sequence[str] = (), classes: bool = False) -> Sifted:
        """The jobs of one set (a key of ``reads.SETS`` but ready) in the list's order that pass filters,
        at most want of them among at most budget entries read after cursor, with these fields (and, with
        classes, the field "class": their error's class, "" without an error, read on the server)."""
        if of not in SETS:
            raise ValueError(f"no set of jobs {of!r} in a queue; known: {', '.join(SETS)}")
        budget, want = _clamp(budget, MAX_BUDGET), _clamp(want, MAX_WANT)
        rows: list[list[str]] = []
        read, in_range, at = 0, None, cursor
        while at is not None and read < budget and len(rows) < want:
            n, found, at, total = self._sift_call(of, filters, at, min(CALL_BUDGET, budget - read), want - len(rows),
                                                  classes)
            read, rows, in_range = read + n, rows + found, total if in_range is None else in_range
        with guard():
            data = self._read_fields([r[0] for r in rows], fields)
        entries = [Entry(r[0], int(float(r[1])), {**f, **({"class": r[2]} if classes else {})})
                   for r, f in zip(rows, data, strict=True)]
        return Sifted(entries, at, read, in_range or 0)

    def _sift_call(self, of: str, filters: Filters, cursor: str, budget: int, want: int,
                   classes: bool) -> tuple[int, list[list[str]], str | None, int]:
        """One call of sift.lua: (entries read, rows kept, the cursor after them or None, entries in range)."""
        suffix, desc = SETS[of]
        after, _, after_id = cursor.partition("|")
        lo, hi = filters.bounds()
        if after and not _score(after):
            raise ValueError(f"not a cursor of a list of jobs: {cursor[:80]!r} (start from the first page)")
        argv = [suffix, "desc" if desc else "asc", lo, hi, after, after_id, budget, want, fold(filters.name),
                filters.fn, filters.group, filters.origin, filters.error, fold(filters.text), "1" if classes else ""]
        reply = self._run("sift", argv)
        in_range, read, last_score, last_id, more = reply[:5]
        width = 3 if classes else 2
        rows = [reply[i : i + width] for i in range(5, len(reply), width)]
        return int(read), rows, f"{last_score}|{last_id}" if int(more) else None, int(in_range)

    def error_classes(self) -> list[ErrorClass]:
        """The dead letter by error class, most jobs first (a hash of at most a few hundred entries)."""
        with guard():
            raw = self.client.hgetall(self.keys.dead_classes)
        found = [c for name, value in raw.items() if (c := classes.parse(name, value)) is not None]
        return sorted(found, key=lambda c: (-c.count, c.name))

    def _read_fields(self, ids: Sequence[str], fields: Sequence[str]) -> list[dict[str, str | None]]:
        if not fields:
            return [{} for _ in ids]
        return stored.read(self.client, [self.keys.job(i) for i in ids], fields)


def _score(text: str) -> bool:
    """Whether text is a sorted set's score as a cursor holds it."""
    try:
        float(text)
    except ValueError:
        return False
    return True


def _clamp(n: int, most: int) -> int:
    return min(max(int(n), 1), most)
