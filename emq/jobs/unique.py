"""Unique jobs and debounce: the uniqueness spec a mint carries to ``_unique.lua``.

The key is the caller's ``unique_key``, else the job's name and a hash of the canonical JSON of its
arguments (a debounced job's default key is its name alone: the latest call's arguments replace the
others'). An encrypted job's hash is keyed (``sealed.digest``): a plain one would let anyone who reads
the server check a guess of the arguments; a new first key of EMQ_ENCRYPTION_KEYS starts new hashes.
The server keeps ``unique:<key>`` -> the id of the job that holds it, expiring on the server's clock.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from ..core import sealed
from ..errors import ConfigurationError
from .options import Options, encrypts

UNTIL = ("finish", "start")


def check(name: str, o: dict[str, Any]) -> None:
    """Refuse flow-control options that could only fail later."""
    for opt in ("unique_for", "debounce"):
        if o.get(opt) is not None and not float(o[opt]) > 0:
            raise ConfigurationError(f"{opt} of {name} must be > 0 seconds, not {o[opt]!r}")
    if o.get("unique_until") not in (None, *UNTIL):
        raise ConfigurationError(f"unique_until of {name} must be one of {list(UNTIL)}, not {o['unique_until']!r}")
    if o.get("unique_key") is not None and (not isinstance(o["unique_key"], str) or not o["unique_key"]):
        raise TypeError(f"unique_key of {name} must be a non-empty string, not {o['unique_key']!r}")


def check_combined(name: str, o: Options) -> None:
    """Options that contradict each other once merged (decorator + .using)."""
    if o.unique_for is not None and o.debounce is not None:
        raise ConfigurationError(f"{name}: give unique_for or debounce, not both (a debounced job is unique already)")
    if o.job_id and (o.unique_for is not None or o.debounce is not None):
        raise ConfigurationError(f"{name}: a job_id is unique by itself; give job_id or unique_for/debounce, not both")


def spec(name: str, o: Options, args_json: str, kwargs_json: str) -> str:
    """mint.lua's uniqueness field for one call: "" (none), "U<ms>|<s|f>|<key>" or "D<ms>|<key>"."""
    if o.debounce is not None:
        return f"D{max(int(o.debounce * 1000), 1)}|{o.unique_key or name}"
    if o.unique_for is None:
        return ""
    key = o.unique_key
    if key is None:
        canonical = json.dumps([json.loads(args_json), json.loads(kwargs_json)], sort_keys=True, separators=(",", ":"))
        key = f"{name}:{sealed.digest(canonical) if encrypts(o) else hashlib.sha1(canonical.encode()).hexdigest()}"
    return f"U{max(int(o.unique_for * 1000), 1)}|{(o.unique_until or 'finish')[0]}|{key}"


def due(o: Options, due: str) -> str:
    """A debounced job is due after its quiet period, pushed back by every later call (_unique.lua)."""
    return f"+{max(int(o.debounce * 1000), 1)}" if o.debounce else due
