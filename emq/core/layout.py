"""A job hash's layout: the fields a mint leaves out while they hold their defaults.

A queued job costs the server its hash, its key and its id in a lane; the hash was two thirds of
it. ``put_job`` in ``_prelude.lua`` writes fn, state, group, lease and created always, and each
field of DEFAULTS only when its value differs (due only when it differs from created): a no-op job
minted with every default is ~110 bytes smaller. Every reader takes an absent field as its default:
the scripts through the same table (``DEFAULT`` in ``_prelude.lua``, a test compares the two), the
Python readers through ``filled``. A job minted with every field (an earlier version) reads the same.

A default is a constant, not a setting: a project whose EMQ_MAX_ATTEMPTS is 5 stores 5 on each job,
so a job runs with what it was minted with whatever the settings say when it runs.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

# The values config.DEFAULTS resolves to for a plain job, as mint sends them (records.MintSpec.argv).
DEFAULTS: dict[str, str] = {
    "args": "[]",
    "kwargs": "{}",
    "attempts": "0",
    "max_attempts": "3",
    "max_stalled": "1",
    "backoff": "1,300",
    "timeout": "3600000,0",
}
DUE, CREATED = "due", "created"  # a job's due time, when left out, is its creation time
WHOLE = (*DEFAULTS, DUE)


def filled(h: dict[str, str | None], fields: Iterable[str] = WHOLE) -> dict[str, str | None]:
    """A job's fields as read (HGETALL, or an HMGET's fields to values) with the left-out ones at
    their defaults; fields: those to fill. A job that does not exist (nothing read) stays as read, so an
    HMGET must ask for a field every job has (fn, state) beside the ones that may be left out."""
    if not any(v is not None for v in h.values()):
        return h
    out = dict(h)
    for name in fields:
        if out.get(name) is None:
            default = out.get(CREATED) if name == DUE else DEFAULTS.get(name)
            if default is not None:
                out[name] = default
    return out


def reads(fields: Sequence[str]) -> list[str]:
    """The fields to HMGET for these: created too when due is asked for (it defaults to created)."""
    return [*fields, CREATED] if DUE in fields and CREATED not in fields else list(fields)


def filled_hmget(fields: Sequence[str], values: Sequence[str | None]) -> dict[str, str | None]:
    """An HMGET of ``reads(fields)`` as fields to values, the left-out ones at their defaults."""
    read = reads(fields)
    h = filled(dict(zip(read, values, strict=True)), fields)
    return {name: h[name] for name in fields}
