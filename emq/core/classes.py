"""An error's class: what the dead letter is grouped by and what the error filter matches.

The class is the error's first line up to its first ``:`` (``ValueError: bad`` -> ``ValueError``,
``emq.errors.JobTimeout: attempt 2 ran past …`` -> ``emq.errors.JobTimeout``, ``stalled: lease expired …``
-> ``stalled``), or the line's first word when it has none (``parent 4f1 dead`` -> ``parent``), at most
CLASS_LEN characters. ``emq/lua/_classes.lua`` computes the same on the server, where the scripts keep each
queue's dead jobs counted by class (a test compares the two).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

CLASS_LEN = 100  # bytes of a class kept (the Lua cuts bytes: the same for ASCII class names)
NONE = "(none)"  # the class of an empty error
OTHER = "(other)"  # where the dead jobs of classes past the hash's bound are counted
ANY = "*"  # the error filter that matches every job with an error (completed after retries, dead)


def error_class(text: str | None) -> str:
    """The class of an error text."""
    line = (text or "").split("\n", 1)[0]
    head, colon, _ = line.partition(":")
    if not colon:
        words = line.split(None, 1)
        head = words[0] if words else ""
    return head.encode()[:CLASS_LEN].decode(errors="ignore").strip() or NONE


@dataclass(frozen=True)
class ErrorClass:
    """One class of the dead letter: how many dead jobs it holds, when the first and the last of them died
    (server ms; the first is not moved when the oldest leave, see ``_classes.lua``)."""

    name: str
    count: int
    first_ms: int
    last_ms: int


_ENTRY = re.compile(r"^(-?\d+),(\d+),(\d+)$")


def parse(name: str, raw: str) -> ErrorClass | None:
    """One entry of a queue's ``dead:classes`` hash, or None when it is not one."""
    m = _ENTRY.match(raw or "")
    return ErrorClass(name, int(m[1]), int(m[2]), int(m[3])) if m else None
