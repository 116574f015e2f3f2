"""Sealing a queue's encrypted jobs again with the newest key (``manage.py emq rekey``), while workers run.

Every job key of the queue is visited by SCAN, whatever its state (scheduled, waiting, ready in a
lane, active, completed, dead, cancelled): a job present for the whole walk is seen at least once,
one seen twice is rewritten once. Per chunk of CHUNK jobs: one pipelined read of their sealed fields
as stored (``stored.read_raw``), and every field of the encrypted ones among them (their step
results: ``journal.resealed``), then the fields not sealed with the newest key are opened with any
key and sealed with the newest here, and ``rekey.lua`` writes each one only while it still holds what
was read (a job a worker finished or a debounce changed meanwhile keeps what they wrote). The walk
reads every key of the server once (SCAN with a pattern): an operator's command, not a hot path.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .. import journal, sealed, stored
from ..connection import guard
from ..encoding import dumps
from .base import Ops

CHUNK = 1000  # jobs read and written per round trip
MAX_BYTES = 16 * 1024 * 1024  # a write round trip carries at most about this much (large arguments)
FIELDS = ("kwargs", "result", "error", "progress_note", "errors")  # what an encrypted job seals (stored.py)


@dataclass
class Rekeyed:
    """What a walk did: jobs seen, encrypted ones among them, those rewritten (dry run: to rewrite), those
    the newest key sealed already, those no key opens (left as they are), fields changed meanwhile."""

    seen: int = 0
    encrypted: int = 0
    rewritten: int = 0
    current: int = 0
    undecryptable: int = 0
    moved: int = 0
    undecryptable_ids: list[str] = field(default_factory=list)  # the first few, to look at


class CryptoOps(Ops):
    """Seal the encrypted jobs of one physical queue again with the newest key."""

    def rekey(self, dry_run: bool = False, progress: Callable[[Rekeyed], None] | None = None,
              chunk: int = CHUNK) -> Rekeyed:
        """Rewrite every sealed field not sealed with the newest key; ``progress`` gets the totals after each chunk."""
        done = Rekeyed()
        ids: list[str] = []
        with guard():
            for key in self.client.scan_iter(match=self.keys.jobs_pattern(), count=chunk):
                ids.append(key[len(self.keys.job("")):])
                if len(ids) == chunk:
                    self._chunk(ids, dry_run, done, progress)
                    ids = []
            if ids or not done.seen:
                self._chunk(ids, dry_run, done, progress)
        return done

    def _chunk(self, ids: list[str], dry_run: bool, done: Rekeyed, progress: Callable[[Rekeyed], None] | None) -> None:
        rows = stored.read_raw(self.client, [self.keys.job(i) for i in ids], FIELDS)
        done.seen += len(ids)
        mine = [(i, row) for i, row in zip(ids, rows, strict=True)  # a key that is not a hash: the scripts'
                if not isinstance(row, Exception) and sealed.is_sealed(row[0])]  # a plain job: nothing to do
        steps = stored.read_all_raw(self.client, [self.keys.job(i) for i, _ in mine]) if mine else []
        items: list[Any] = []
        size = 0
        for (job_id, row), h in zip(mine, steps, strict=True):
            done.encrypted += 1
            try:
                changes = [(name, old, new) for name, old in zip(FIELDS, row, strict=True)
                           if old is not None and (new := _resealed(name, old)) is not None]
                changes += journal.resealed(h) if isinstance(h, dict) else []
            except sealed.CannotDecrypt:
                done.undecryptable += 1
                if len(done.undecryptable_ids) < 10:
                    done.undecryptable_ids.append(job_id)
                continue
            if not changes:
                done.current += 1
                continue
            done.rewritten += 1
            for name, old, new in changes:
                items += [job_id, name, old, new]
                size += len(old) + len(new)
            if size > MAX_BYTES and not dry_run:
                done.moved += self._write(items)
                items, size = [], 0
        if items and not dry_run:
            done.moved += self._write(items)
        if progress is not None:
            progress(done)

    def _write(self, items: list[Any]) -> int:
        """Write items (id, field, old, new) whose field still holds old; how many no longer did."""
        _, moved = self._run("rekey", items)
        return int(moved)


def _resealed(name: str, value: str) -> str | None:
    """A field's value sealed with the newest key, or None when it needs nothing (plain, or the newest's)."""
    if name == "result":
        inner = value[1:-1] if value.startswith('"' + sealed.MARK) else None
        new = sealed.resealed(inner) if inner is not None else None
        return None if new is None else f'"{new}"'
    if name == "errors":
        return _resealed_errors(value)
    return sealed.resealed(value) if sealed.is_sealed(value) else None


def _resealed_errors(raw: str) -> str | None:
    """An error history with each sealed entry sealed with the newest key, or None when none needed it."""
    try:
        entries = json.loads(raw)
    except ValueError:
        return None
    changed = False
    for entry in entries if isinstance(entries, list) else []:
        if isinstance(entry, dict) and sealed.is_sealed(entry.get("error")):
            new = sealed.resealed(entry["error"])
            if new is not None:
                entry["error"], changed = new, True
    return dumps(entries) if changed else None
