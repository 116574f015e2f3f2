"""The dashboard's view of a page of jobs: rows, where the next page starts, what was scanned.

The engine reads the page: a page by offset (``Queue.page``, ``Queue.lane_page``), or a filtered page
(``Queue.sift``, ``Queue.lane_sift``: at most SCAN_BUDGET entries read a request, the time range on the
set's index) that says where it stopped, a cursor the next page goes on from. Nothing ever loads a whole set.
A filter on the arguments is checked again here on the arguments as the page shows them, secrets masked, so
a search never tells a viewer what a masked value holds.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..core.engine import Queue
from ..core.engine.filters import Filters, fold
from ..core.engine.reads import Page
from . import masking

PAGE = 50  # rows per page
SCAN_BUDGET = 1000  # entries a filtered page reads at most per request (each is a read on the server)

__all__ = ["PAGE", "SCAN_BUDGET", "Filters", "Row", "Slice", "shows", "sifted", "sliced"]


@dataclass
class Row:
    """One job of a list: its id, its score in the set (a time in ms) and the fields asked for."""

    id: str
    score: int
    fields: dict[str, str | None]

    @property
    def missing(self) -> bool:
        return not any(v is not None for v in self.fields.values())


@dataclass
class Slice:
    """A page of a set: rows, where the next page starts (None at the end) and what was scanned."""

    rows: list[Row]
    start: int
    next: int | None
    total: int
    scanned: int = 0
    filtered: bool = False
    budget: int = SCAN_BUDGET
    extra: dict[str, Any] = field(default_factory=dict)
    cursor: str | None = None  # a filtered page: where the next one starts (None: the end)
    at: str = ""  # a filtered page: the cursor it started from ("": the first page)

    @property
    def end(self) -> int:
        return self.start + len(self.rows)

    @property
    def prev(self) -> int | None:
        if self.filtered or self.start <= 0:
            return None
        return max(self.start - PAGE, 0)


def sliced(page: Page, budget: int = SCAN_BUDGET) -> Slice:
    """An engine page as the dashboard's list shows it (rows it may annotate: masked, a count added)."""
    rows = [Row(e.id, e.score, dict(e.fields)) for e in page.entries]
    return Slice(rows, page.start, page.next, page.total, scanned=page.scanned, filtered=page.filtered, budget=budget)


def sifted(q: Queue, of: str, filters: Filters, cursor: str, fields: tuple[str, ...]) -> Slice:
    """A filtered page of one list (``reads.SETS``' keys, or ready) from cursor, rows with these fields."""
    asked = (*fields, *(f for f in ("fn", "args", "kwargs") if filters.text and f not in fields))
    if of == "ready":
        page = q.lane_sift(filters, cursor, budget=SCAN_BUDGET, want=PAGE, fields=asked)
    else:
        page = q.sift(of, filters, cursor, budget=SCAN_BUDGET, want=PAGE, fields=asked)
    rows = [Row(e.id, e.score, dict(e.fields)) for e in page.entries if shows(e.fields, filters.text)]
    return Slice(rows, 0, None, page.in_range, scanned=page.read, filtered=True, cursor=page.cursor, at=cursor)


def shows(fields: dict[str, str | None], text: str) -> bool:
    """Whether a job's arguments, secrets masked as the dashboard shows them, hold text (ASCII letters fold)."""
    if not text:
        return True
    clean = masking.clean(fields)
    return any(fold(text) in fold(clean.get(k) or "") for k in ("args", "kwargs"))
