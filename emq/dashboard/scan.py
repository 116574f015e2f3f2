"""Bounded reads of a queue's sorted sets: a page by offset, or a filtered page by a bounded scan.

A filter on job name, group or origin cannot use an index, so a filtered page reads at most
SCAN_BUDGET entries per request from a position and says where it stopped; the next page
goes on from there. Nothing here ever loads a whole set.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..core import layout

PAGE = 50  # rows per page
SCAN_BUDGET = 2000  # entries a filtered page reads at most per request
CHUNK = 500  # entries read per round trip while scanning
FILTER_FIELDS = ("fn", "group", "origin")


@dataclass(frozen=True)
class Filters:
    """What a list is filtered by: job name (substring), group and origin (exact)."""

    name: str = ""
    group: str = ""
    origin: str = ""

    @classmethod
    def from_query(cls, params: Any) -> Filters:
        return cls(*(params.get(k, "").strip() for k in ("name", "group", "origin")))

    @property
    def active(self) -> bool:
        return bool(self.name or self.group or self.origin)

    def match(self, fn: str | None, group: str | None, origin: str | None) -> bool:
        """True when a job with these fields passes every filter that is set."""
        if fn is None:
            return False
        return (
            (not self.name or self.name.lower() in fn.lower())
            and (not self.group or self.group == group)
            and (not self.origin or self.origin == origin)
        )

    def describe(self) -> str:
        parts = [f"{k} {v!r}" for k, v in (("name", self.name), ("group", self.group), ("origin", self.origin)) if v]
        return ", ".join(parts)


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

    @property
    def end(self) -> int:
        return self.start + len(self.rows)

    @property
    def prev(self) -> int | None:
        if self.filtered or self.start <= 0:
            return None
        return max(self.start - PAGE, 0)


def _range(client: Any, key: str, start: int, count: int, desc: bool) -> list[tuple[str, float]]:
    return client.zrange(key, start, start + count - 1, desc=desc, withscores=True)


def hmget_many(client: Any, keys: Sequence[str], fields: Sequence[str]) -> list[dict[str, str | None]]:
    """HMGET the same fields of many jobs in one pipelined round trip, the ones a mint left out at their
    defaults (core/layout.py); a job that is gone reads as all None."""
    read = layout.reads(fields)
    pipe = client.pipeline(transaction=False)
    for key in keys:
        pipe.hmget(key, read)
    return [layout.filled_hmget(fields, values) for values in pipe.execute()]


def page(client: Any, key: str, job_key: Any, start: int, fields: Sequence[str], *, desc: bool,
         filters: Filters | None = None) -> Slice:
    """One page of a set from offset start, newest or oldest first; filtered by a bounded scan."""
    start = max(int(start), 0)
    total = client.zcard(key)
    if filters is not None and filters.active:
        return _filtered(client, key, job_key, start, fields, desc, filters, total)
    entries = _range(client, key, start, PAGE, desc)
    data = hmget_many(client, [job_key(i) for i, _ in entries], fields)
    rows = [Row(i, int(s), f) for (i, s), f in zip(entries, data, strict=True)]
    nxt = start + PAGE if start + PAGE < total else None
    return Slice(rows, start, nxt, total, scanned=len(rows))


def _filtered(client: Any, key: str, job_key: Any, start: int, fields: Sequence[str], desc: bool,
              filters: Filters, total: int) -> Slice:
    pos, scanned, hits = start, 0, []
    while len(hits) < PAGE and scanned < SCAN_BUDGET:
        entries = _range(client, key, pos, min(CHUNK, SCAN_BUDGET - scanned), desc)
        if not entries:
            break
        data = hmget_many(client, [job_key(i) for i, _ in entries], FILTER_FIELDS)
        for (jid, score), f in zip(entries, data, strict=True):
            pos += 1
            scanned += 1
            if filters.match(f["fn"], f["group"], f["origin"]):
                hits.append((jid, score))
                if len(hits) == PAGE:
                    break
    data = hmget_many(client, [job_key(i) for i, _ in hits], fields)
    rows = [Row(i, int(s), f) for (i, s), f in zip(hits, data, strict=True)]
    return Slice(rows, start, pos if pos < total else None, total, scanned=scanned, filtered=True)


def matching_ids(client: Any, key: str, job_key: Any, filters: Filters, budget: int) -> tuple[list[str], int]:
    """Ids of a set (oldest first) that pass the filters, reading at most budget entries."""
    pos, ids = 0, []
    while pos < budget:
        entries = client.zrange(key, pos, pos + min(CHUNK, budget - pos) - 1)
        if not entries:
            break
        if filters.active:
            data = hmget_many(client, [job_key(i) for i in entries], FILTER_FIELDS)
            ids.extend(i for i, f in zip(entries, data, strict=True) if filters.match(f["fn"], f["group"], f["origin"]))
        else:
            ids.extend(entries)
        pos += len(entries)
    return ids, pos
