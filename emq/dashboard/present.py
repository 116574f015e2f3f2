"""How the dashboard shows values: relative times, pretty JSON with secrets masked, short errors."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from ..core import journal, keys
from . import masking

MAX_MS = 253_402_300_799_999  # 9999-12-31 23:59:59.999 UTC, the last instant a datetime can hold


def as_ms(value: Any) -> int | None:
    """A stored timestamp as int ms, or None when it is corrupt (it is then shown as stored)."""
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def relative(ms: int, now_ms: int) -> str:
    """"in 4 s", "3 min ago", "now": the distance from the server's now, in words."""
    delta = (int(ms) - int(now_ms)) / 1000
    size = abs(delta)
    if size < 1:
        return "now"
    for unit, seconds in (("d", 86400), ("h", 3600), ("min", 60), ("s", 1)):
        if size >= seconds:
            n = int(size // seconds)
            return f"in {n} {unit}" if delta > 0 else f"{n} {unit} ago"
    return "now"


def duration(ms: int | None) -> str:
    """A length of time in the largest sensible unit: "850 ms", "12 s", "3 min"."""
    if ms is None:
        return "—"
    ms = int(ms)
    if ms < 1000:
        return f"{ms} ms"
    for unit, seconds in (("d", 86400), ("h", 3600), ("min", 60), ("s", 1)):
        if ms >= seconds * 1000:
            return f"{ms // (seconds * 1000)} {unit}"
    return f"{ms} ms"


def exact(ms: int) -> str:
    """The exact UTC time of a server ms timestamp, for a hover title ("year 12000" past datetime's range)."""
    if not -62_135_596_800_000 <= int(ms) <= MAX_MS:
        return f"{int(ms)} ms since 1970 (beyond year 9999)"
    return datetime.fromtimestamp(int(ms) / 1000, tz=UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + " UTC"


def pretty(raw: str | None, secret_safe: bool = True) -> str:
    """Indented JSON of a stored JSON text, secrets masked; the raw text when it is not JSON."""
    if raw in (None, ""):
        return ""
    try:
        value = masking.decode(raw)  # nesting cut at MAX_DEPTH levels: printing it stays within the stack
    except ValueError:
        return raw
    shown = masking.Masked().value(value) if secret_safe else value
    return json.dumps(shown, indent=2, ensure_ascii=False, sort_keys=True)


def seconds(value: float) -> str:
    """Seconds in words, as a setting is written: "1 s", "0.5 s", "5 min"."""
    if value >= 60 and value % 60 == 0:
        return duration(int(value * 1000))
    return f"{value:g} s"


def backoff(stored: str | None) -> str:
    """A stored backoff "<base>,<cap>" (seconds) as a user reads it: "1 s doubling to 300 s"."""
    try:
        base, cap = (float(x) for x in (stored or "").split(","))
    except ValueError:
        return stored or ""
    return f"{seconds(base)} doubling to {seconds(cap)}, each retry a random wait up to that"


def limits(stored: str | None) -> str:
    """A stored "<limit ms>,<soft ms>" as a user reads it: "10 min", "10 min (soft limit 8 min)", "none"."""
    try:
        hard, soft = (int(float(x)) for x in (stored or "").split(","))
    except ValueError:
        return stored or ""
    text = duration(hard) if hard else "none"
    return f"{text} (soft limit {duration(soft)})" if soft else text


def group(name: str | None) -> str:
    """A job's group as a user reads it: the default lane ("_", no group given) as "—"."""
    return "—" if name in (None, "", keys.DEFAULT_GROUP) else str(name)


def percent(fraction: str | None) -> int | None:
    """A stored progress fraction as a whole percent (0..100), None when there is none or it is corrupt."""
    try:
        return int(round(min(max(float(fraction or ""), 0.0), 1.0) * 100))
    except ValueError:
        return None


def first_line(text: str | None) -> str:
    return (text or "").split("\n", 1)[0]


TIME_FIELDS = ("created", "due", "claimed", "lease_until", "finished", "reclaimed_at", "revived_at", "progress_at")
# Fields stored as numbers or codes, shown as a user reads them (the stored value in the cell's title).
READABLE = {"backoff": ("backoff", backoff), "timeout": ("time limit", limits), "group": ("group", group),
            "lease": ("lease", lambda v: duration(as_ms(v)) if as_ms(v) is not None else v or "")}
JSON_FIELDS = ("args", "kwargs", "result")
ORDER = ("fn", "state", "reason", "group", "origin", "attempts", "max_attempts", "stalled", "max_stalled", "worker",
         "reclaimed_from", *TIME_FIELDS, *JSON_FIELDS, "error")


def progress(h: dict[str, str]) -> tuple[int, str] | None:
    """A job's last progress as (percent, note), or None when it reported none (or a corrupt value).

    The note with every secret value of the job's arguments scrubbed (``masking.clean``).
    """
    try:
        percent = int(round(min(max(float(h["progress"]), 0.0), 1.0) * 100))
    except (KeyError, ValueError):  # none, or not a number (NaN too)
        return None
    return percent, masking.clean(h).get("progress_note") or ""


def describe(h: dict[str, str]) -> list[tuple[str, str, Any]]:
    """Every stored field of a job as (name, kind, value), kind telling the template how to show it; a
    field stored as a code (READABLE) as (its label, "readable", (what it means, what is stored))."""
    h = masking.clean(h)
    hidden = ("errors", "fallen")  # fallen: the children a failed end told, listed under Workflow (thousands, maybe)
    names = [n for n in ORDER if n in h] + sorted(n for n in h if n not in ORDER and n not in hidden
                                                  and not journal.is_journal(n))  # shown apart (steps.py)
    out: list[tuple[str, str, Any]] = []
    for n in names:
        if n in READABLE:
            label, show = READABLE[n]
            out.append((label, "readable", (show(h[n]), h[n])))
        elif n in TIME_FIELDS and as_ms(h[n]) is not None:
            out.append((n, "time", h[n]))
        elif n in JSON_FIELDS:
            out.append((n, "json", pretty(h[n])))
        elif n == "error":
            out.append((n, "pre", h[n]))
        else:
            out.append((n, "text", h[n]))
    return out
