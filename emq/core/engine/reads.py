"""Reading a queue's jobs without changing them: a page of one of its sets, jobs by id with the fields
asked for, one job whole. The dashboard, the commands, ``emq.testing`` and the metrics read through
these (and ``lanereads``, ``observe``), never a job hash or a set directly (a test pins it).

Every read is bounded: a page by offset (ZRANGE) and its jobs' fields in one pipelined round trip,
or a filtered page by a bounded scan that says where it stopped; nothing loads a whole set (rule 8).
A job's fields come back by name, the left-out ones at the defaults of its format (``stored``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .. import idindex, stored
from ..connection import guard
from .base import Ops
from .filters import Filters

PAGE = 50  # entries of a page unless asked otherwise
SCAN_BUDGET = 2000  # entries a filtered page reads at most
CHUNK = 500  # entries read per round trip while scanning
# The sets a page reads: what they hold -> (the set's key suffix, newest first).
SETS = {"waiting": ("waiting", False), "scheduled": ("scheduled", False), "active": ("leases", False),
        "stalled": ("reclaims", True), "completed": ("done", True), "dead": ("dead", True),
        "cancelled": ("cancelled", True)}

Fields = dict[str, "str | None"]


@dataclass(frozen=True)
class Entry:
    """One job of a page: its id, its score in the set (a time in ms) and the fields asked for (all None:
    the job is gone)."""

    id: str
    score: int
    fields: Fields


@dataclass(frozen=True)
class Page:
    """A page of a set: its entries, where the next page starts (None at the end), the set's size, how many
    entries were read, and whether a filter chose them (a filtered page goes on from ``next``)."""

    entries: list[Entry]
    start: int
    next: int | None
    total: int
    scanned: int
    filtered: bool = False


class ReadOps(Ops):
    """Pages of a queue's sets and its jobs' fields; ``Queue`` inherits these."""

    def page(self, of: str, start: int = 0, fields: Sequence[str] = (), *, count: int = PAGE,
             filters: Filters | None = None, budget: int = SCAN_BUDGET) -> Page:
        """A page of the jobs of one set (a key of SETS) from position start in its order, with these
        fields; filtered: up to count matches among at most budget entries read from start."""
        key, desc = self._set(of)
        start = max(int(start), 0)
        with guard():
            total = self.client.zcard(key)
            if filters is not None and filters.active:
                return self._filtered(key, desc, start, fields, count, filters, budget, total)
            entries = self.client.zrange(key, start, start + count - 1, desc=desc, withscores=True)
            data = self._read([i for i, _ in entries], fields)
        nxt = start + count if start + count < total else None
        return Page([Entry(i, int(s), f) for (i, s), f in zip(entries, data, strict=True)], start, nxt, total,
                    len(entries))

    def _filtered(self, key: str, desc: bool, start: int, fields: Sequence[str], count: int, filters: Filters,
                  budget: int, total: int) -> Page:
        pos, hits = start, []
        while len(hits) < count and pos - start < budget:
            entries = self.client.zrange(key, pos, pos + min(CHUNK, budget - (pos - start)) - 1, desc=desc,
                                         withscores=True)
            if not entries:
                break
            for (jid, score), f in zip(entries, self._read([i for i, _ in entries], filters.needs()), strict=True):
                pos += 1
                if filters.passes(f, int(score)):
                    hits.append((jid, score))
                    if len(hits) == count:
                        break
        data = self._read([i for i, _ in hits], fields)
        return Page([Entry(i, int(s), f) for (i, s), f in zip(hits, data, strict=True)], start,
                    pos if pos < total else None, total, pos - start, filtered=True)

    def ids(self, of: str, start: int = 0, count: int = PAGE, filters: Filters | None = None) -> tuple[list[str], int]:
        """Ids of one set oldest first among the count entries from start, those that pass filters if given,
        and how many entries were read (fewer than count at the set's end)."""
        key, _ = self._set(of)
        with guard():
            if filters is None or not filters.active:
                ids = self.client.zrange(key, start, start + count - 1)
                return ids, len(ids)
            pos, out, end = start, [], start + count
            while pos < end:
                entries = self.client.zrange(key, pos, pos + min(CHUNK, end - pos) - 1, withscores=True)
                if not entries:
                    break
                data = self._read([i for i, _ in entries], filters.needs())
                out += [i for (i, score), f in zip(entries, data, strict=True) if filters.passes(f, int(score))]
                pos += len(entries)
            return out, pos - start

    def size(self, of: str) -> int:
        """How many jobs one set holds."""
        key, _ = self._set(of)
        with guard():
            return int(self.client.zcard(key))

    def jobs(self, ids: Sequence[str], fields: Sequence[str]) -> list[Fields]:
        """These fields of each job, in one pipelined round trip (all None: the job is gone)."""
        with guard():
            return self._read(ids, fields)

    def job_fields(self, job_id: str) -> dict[str, str] | None:
        """Every stored field of one job, the left-out ones at their defaults; None when it does not exist."""
        with guard():
            return stored.read_all(self.client, self.keys.job(job_id)) or None

    def _read(self, ids: Sequence[str], fields: Sequence[str]) -> list[Fields]:
        return stored.read(self.client, [self.keys.job(i) for i in ids], fields)

    def _set(self, of: str) -> tuple[str, bool]:
        if of not in SETS:
            raise ValueError(f"no list of jobs {of!r} in a queue; known: {', '.join(SETS)}")
        suffix, desc = SETS[of]
        return self.keys.fixed(suffix), desc


def holders(queues: Sequence[Ops], job_id: str) -> list[str]:
    """The names of the queues among these that hold a job with this id, in one pipelined round trip."""
    if not queues:
        return []
    with guard():
        pipe = queues[0].client.pipeline(transaction=False)
        for q in queues:
            pipe.exists(q.keys.job(job_id))
        found = pipe.execute()
    return [q.name for q, hit in zip(queues, found, strict=True) if hit]


def present(client: Any, refs: Sequence[tuple[Ops, str]], indexed: Sequence[str] = (), prefix: str = "",
            whole: bool = False) -> tuple[list[Any], list[set[str]]]:
    """Whether each (queue, job id) exists (whole: its every field, ``job_fields``'s; {} when gone), and
    the id index entry of each of indexed (the physical queues noted for that caller-chosen id,
    ``idindex``), in one pipelined round trip."""
    if not refs and not indexed:
        return [], []
    with guard():
        pipe = client.pipeline(transaction=False)
        for q, job_id in refs:
            if whole:
                stored.ask_all(pipe, q.keys.job(job_id))
            else:
                pipe.exists(q.keys.job(job_id))
        for job_id in indexed:
            idindex.ask(pipe, prefix, job_id)
        replies = pipe.execute(raise_on_error=False)
    head = replies[: len(refs)]
    if whole:
        found = [stored.answer_all(r) for r in stored.unpacked(client, [q.keys.job(i) for q, i in refs], head)]
    else:
        found = [bool(stored.raised(r)) for r in head]
    return found, [set(stored.raised(r)) for r in replies[len(refs) :]]


def states(refs: Sequence[tuple[Ops, str]]) -> list[str | None]:
    """The state of each (queue, job id), in one pipelined round trip (None: gone)."""
    if not refs:
        return []
    with guard():
        pipe = refs[0][0].client.pipeline(transaction=False)
        keys = [q.keys.job(job_id) for q, job_id in refs]
        for key in keys:
            stored.ask(pipe, key, ("state",))
        replies = stored.unpacked(refs[0][0].client, keys, pipe.execute(raise_on_error=False), stored.reads(("state",)))
        return [stored.answer(("state",), r)["state"] for r in replies]
