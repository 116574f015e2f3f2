"""What a list of jobs is filtered by, and how a filter reads in a URL, on a command line and in a script.

A filter on the time range uses the index every set keeps (its score: minted, due, lease expiry, reclaimed
or finished ms): ``ZRANGE … BYSCORE`` bounds, never a scan. The other filters read each job of the range in
a bounded slice (``sift.lua`` on the server, or the lane walk for ready jobs). Text is matched with ASCII
letters folded, on the server and here alike.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from datetime import UTC, datetime
from typing import Any

from ..classes import ANY, error_class

QUERY = ("name", "fn", "group", "origin", "error", "match", "since", "until")  # the parameters, in order


def fold(text: str) -> str:
    """Text with its ASCII letters in lower case and nothing else changed (what Lua's string.lower does)."""
    return text.translate(_FOLD)


_FOLD = {c: c + 32 for c in range(ord("A"), ord("Z") + 1)}


def parse_time(text: str, what: str = "time") -> int:
    """Epoch ms of an ISO 8601 date or time ("2025-05-01", "2025-05-01T12:30", "…+02:00", "…Z"); a time
    without an offset is UTC, as the dashboard shows times. ValueError saying what it expected."""
    try:
        when = datetime.fromisoformat(text.strip())
    except ValueError:
        raise ValueError(f"{what} {text!r} is not an ISO 8601 date or time: use e.g. 2025-05-01 or "
                         "2025-05-01T12:30 (UTC) or 2025-05-01T12:30+02:00") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return int(when.timestamp() * 1000)


@dataclass(frozen=True)
class Filters:
    """A list's filters: job name (a part of it, any case) or exact name (fn), group and origin (exact),
    error class (exact; "*": any error), a part of the arguments' JSON (text; "match" in a query), and a
    time range in epoch ms on the list's own time (since and until, both included; None: open)."""

    name: str = ""
    group: str = ""
    origin: str = ""
    error: str = ""
    text: str = ""
    since: int | None = None
    until: int | None = None
    fn: str = ""

    @classmethod
    def from_query(cls, params: Any) -> Filters:
        """From a query's parameters (a mapping with ``get``: a request's GET or POST); ValueError naming a
        time that does not parse."""
        text = {k: (params.get(k) or "").strip() for k in QUERY}
        times = {k: parse_time(text[k], k) if text[k] else None for k in ("since", "until")}
        return cls(text["name"], text["group"], text["origin"], text["error"], text["match"], **times, fn=text["fn"])


    def query(self) -> dict[str, str]:
        """The parameters that give these filters back (``from_query``), times in ISO 8601 UTC."""
        out = {("match" if f.name == "text" else f.name): getattr(self, f.name) for f in fields(self)
               if f.name not in ("since", "until")}
        for k in ("since", "until"):
            ms = getattr(self, k)
            out[k] = "" if ms is None else iso(ms)
        return {k: v for k, v in out.items() if v}

    @property
    def active(self) -> bool:
        return bool(self.content or self.ranged)

    @property
    def content(self) -> bool:
        """Whether a filter reads the jobs (anything but the time range)."""
        return bool(self.name or self.fn or self.group or self.origin or self.error or self.text)

    @property
    def ranged(self) -> bool:
        return self.since is not None or self.until is not None

    def bounds(self) -> tuple[str, str]:
        """The time range as a sorted set's score bounds."""
        return ("-inf" if self.since is None else str(self.since), "+inf" if self.until is None else str(self.until))

    def needs(self) -> tuple[str, ...]:
        """The fields a job is read with to be matched here (``passes``)."""
        return ("fn", "group", "origin", *(("error",) if self.error else ()),
                *(("args", "kwargs") if self.text else ()))

    def passes(self, f: dict[str, str | None], when: int | None = None) -> bool:
        """Whether a job with these fields (``needs``) and this time passes every filter set (gone: never,
        once a filter is set)."""
        if f.get("fn") is None:
            return not self.active
        fn = f["fn"] or ""
        return ((not self.fn or fn == self.fn) and (not self.name or fold(self.name) in fold(fn))
                and (not self.group or self.group == f.get("group"))
                and (not self.origin or self.origin == (f.get("origin") or ""))
                and self._error_passes(f.get("error")) and self._text_passes(f) and self.within(when))

    def within(self, when: int | None) -> bool:
        """Whether a time (None: not known) lies in the range."""
        if when is None:
            return True
        return (self.since is None or when >= self.since) and (self.until is None or when <= self.until)

    def _error_passes(self, error: str | None) -> bool:
        return not self.error or (error is not None and (self.error == ANY or error_class(error) == self.error))

    def _text_passes(self, f: dict[str, str | None]) -> bool:
        needle = fold(self.text)
        return not self.text or needle in fold(f.get("args") or "") or needle in fold(f.get("kwargs") or "")

    def match(self, fn: str | None, group: str | None, origin: str | None) -> bool:
        """``passes`` on a job's name, group and origin alone."""
        return self.passes({"fn": fn, "group": group, "origin": origin})

    def describe(self) -> str:
        parts = [f"{k} {v!r}" for k, v in self.query().items()]
        return ", ".join(parts)


def iso(ms: int) -> str:
    """Epoch ms as ISO 8601 UTC to the minute or second ("2025-05-01T12:30Z")."""
    when = datetime.fromtimestamp(ms / 1000, tz=UTC)
    return when.strftime("%Y-%m-%dT%H:%M:%S" if when.second or when.microsecond else "%Y-%m-%dT%H:%M") + "Z"
