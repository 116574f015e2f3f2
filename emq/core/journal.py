"""A durable job's journal: its done steps, sleeps, signals and children, as fields of its own hash.

Each entry is one field, ``@<kind>:<name>`` = ``<recorded ms>|<seq>|<JSON>`` (``_journal.lua``
writes them; the first write of a field wins), so reading them all is the one HGETALL that reads
the job, a job that never calls ``ctx.step`` stores none (and pays nothing), and every path that
deletes a job (retention, the admin's delete, a purge) deletes its journal with it. A wait for a
signal also keeps ``@t:<name>``, its deadline in server ms, and ``@n`` counts the entries (their
order). This module alone knows the layout; the scripts follow it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from . import encrypted, sealed
from .lenient import loose

MARK = "@"
# kind letter -> what ``Step.kind`` calls it
KINDS = {"s": "step", "z": "sleep", "w": "signal", "p": "spawn", "c": "children"}
SEALED = (f"{MARK}s:", f"{MARK}w:", f"{MARK}c:")  # the entries an encrypted job keeps sealed
DEADLINE = "t"  # @t:<name>: a wait's deadline (not an entry)


@dataclass(frozen=True)
class Step:
    """One entry of a job's journal, as ``Job.steps`` lists them in the order they were recorded.

    ``kind`` is "step" (``ctx.step``: ``result`` is what it returned), "sleep" (``until``: its wake
    time), "signal" (a signal the job took: ``result`` is its payload; with ``finished`` None, the
    signal the job waits for now, ``until`` its deadline), "spawn" (``result``: the child's
    [queue, id]) or "children" (``result``: the children's results, in spawn order).
    """

    name: str
    kind: str
    finished: datetime | None
    result: Any = None
    until: datetime | None = None


def field(kind: str, name: str) -> str:
    """The hash field of one entry: ``@s:charge``, ``@z:1``..."""
    return f"{MARK}{kind}:{name}"


def entries(pairs: list[str]) -> dict[str, str]:
    """A job's journal as a script sends it (``_journal.lua``'s journal_after: field, value, ... after a head)."""
    return dict(zip(pairs[::2], pairs[1::2], strict=True))


def is_journal(name: str) -> bool:
    """Whether a field of a job's hash belongs to its journal (the dashboard lists them apart)."""
    return name.startswith(MARK)


def value(stored: str) -> Any:
    """The JSON value of a stored entry (a step's result, a signal's payload, a sleep's wake ms). An encrypted
    job's step result is sealed as its result is (``encrypted.seal_result``): opened here, CannotDecrypt (a
    ValueError) when no key opens it."""
    return loose(encrypted.open_result(stored.split("|", 2)[2]))


def sealed_value(text: str, seal: bool) -> str:
    """A step's result JSON as an encrypted job (seal) keeps it: sealed, a JSON string; else as it is."""
    return encrypted.seal_result(text) if seal else text


def resealed(h: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    """An encrypted job's sealed entries (step results, signal payloads, children's results) not sealed with
    the newest key, sealed with it: (field, stored, new) for ``rekey``. CannotDecrypt when no key opens one."""
    out = []
    for name, stored in h.items():
        if name[:3] not in SEALED or not stored:
            continue
        at, seq, text = stored.split("|", 2)
        new = sealed.resealed(text[1:-1]) if text.startswith('"' + sealed.MARK) else None
        if new is not None:
            out.append((name, stored, f'{at}|{seq}|"{new}"'))
    return out


def steps_of(h: Mapping[str, str | None]) -> tuple[Step, ...]:
    """The journal of a job's hash (every field, as HGETALL reads it), oldest first; a wait in progress last."""
    entries = []
    for name, stored in h.items():
        if not name.startswith(MARK) or name[2:3] != ":" or name[1] not in KINDS or not stored:
            continue
        try:
            at, seq, _ = stored.split("|", 2)
            entries.append((int(seq), _step(name[1], name[3:], int(at), stored)))
        except ValueError:  # a corrupt entry stays readable in the raw hash, not here
            continue
    out = [step for _, step in sorted(entries, key=lambda e: e[0])]
    waits = h.get("waits")
    if h.get("state") == "waiting" and waits is not None:
        out.append(Step(waits, "signal", None, None, from_ms(h.get(field(DEADLINE, waits)))))
    return tuple(out)


def from_ms(value: Any) -> datetime | None:
    """An aware UTC datetime from server milliseconds, or None when unset (``records`` re-exports it)."""
    if value in (None, ""):
        return None
    return datetime.fromtimestamp(int(value) / 1000, tz=UTC)


def _step(kind: str, name: str, at: int, stored: str) -> Step:
    try:
        result = value(stored)
    except ValueError:  # sealed with a key since removed: shown as the job's other sealed fields are
        result = encrypted.ENCRYPTED
    if kind == "z":
        return Step(name, "sleep", from_ms(at), None, from_ms(result if isinstance(result, int) else None))
    return Step(name, KINDS[kind], from_ms(at), result)
