"""The ``Last-Event-ID`` of an event stream: where a client stands in each partition's stream, exactly.

One stream entry holds the changes of one script call (up to 100), and each change is its own
Server-Sent Event, so a client may stop inside an entry. Its position in a partition is the
entry's id when it has every change of it (``1718000000000-0``, the stream entry id), or the
id and how many of its changes it has (``1718000000000-0.2``); a partitioned queue's positions
are joined by commas in partition order. ``0`` means from the oldest entry kept.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

ENTRY = re.compile(r"^\d{1,20}-\d{1,20}$")
MAX_SEQ = 2**64 - 1  # a stream id's sequence part is a 64-bit unsigned number


@dataclass(frozen=True)
class Position:
    """After every change of entry ``entry`` (taken None), or after its first ``taken`` changes."""

    entry: str
    taken: int | None = None

    def text(self) -> str:
        return self.entry if self.taken is None else f"{self.entry}.{self.taken}"

    def cursor(self) -> str:
        """The id XREAD reads on after (exclusive): the entry itself, or the id just before a part-read one."""
        return self.entry if self.taken is None else before(self.entry)


def before(entry: str) -> str:
    """The greatest stream id below entry, so that reading after it returns entry again."""
    ms, seq = (int(x) for x in entry.split("-"))
    if seq > 0:
        return f"{ms}-{seq - 1}"
    return f"{ms - 1}-{MAX_SEQ}" if ms > 0 else "0-0"


def parse(text: str, partitions: int) -> list[Position]:
    """The positions a Last-Event-ID names, one per partition; ValueError saying what is wrong."""
    text = text.strip()
    if text == "0":
        return [Position("0-0")] * partitions
    parts = text.split(",")
    if len(parts) != partitions:
        raise ValueError(f"Last-Event-ID {text[:80]!r} has {len(parts)} position(s), the queue {partitions} "
                         "partition(s): send back the id of the last event received")
    return [_position(p) for p in parts]


def _position(part: str) -> Position:
    entry, dot, taken = part.partition(".")
    if not ENTRY.match(entry) or (dot and not taken.isdigit()) or int(entry.split("-")[1]) > MAX_SEQ:
        raise ValueError(f"Last-Event-ID part {part[:60]!r} is not a stream entry id (<ms>-<seq>, "
                         "optionally .<changes taken>)")
    return Position(entry, int(taken) if dot else None)


def render(positions: Sequence[Position]) -> str:
    return ",".join(p.text() for p in positions)
