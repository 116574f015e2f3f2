"""A job's stored record as a test reads and spoils it, in either format (a hash, or format "2"'s packed string).

The suite runs under EMQ_RECORD_FORMAT "1" and again under "2" (.ci/run), so a test that looks at a job's
fields, or changes them to play a fault, goes through here, never a hash command on the job's key: reads through
``emq.core.stored`` (the record's one owner in Python), exactly as stored (left-out fields absent, sealed ones
sealed); writes as a fault would leave the record. A packed record that a test changes is written back as a
hash holding the change: every release reads a hash (a format-2 job whose value holds the separator stays one),
so the engine meets the spoiled field as it would in format 1.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import redis

from emq.core import stored


def fields(client: redis.Redis, key: str) -> dict[str, str]:
    """Every field stored at key, as stored ({}: no record); raises for a key that holds neither form."""
    (record,) = stored.read_all_raw(client, [key])
    return stored.raised(record)


def field(client: redis.Redis, key: str, name: str) -> str | None:
    """One field as stored (None: left out, or no record)."""
    return fields(client, key).get(name)


def some(client: redis.Redis, key: str, *names: str) -> list[str | None]:
    """Some fields as stored, in the order asked (HMGET's answer)."""
    record = fields(client, key)
    return [record.get(name) for name in names]


def has(client: redis.Redis, key: str, name: str) -> bool:
    return name in fields(client, key)


# Swap a packed record for a hash of its new fields, unless it changed since it was read (then 0: read again).
_SWAP = """if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], unpack(ARGV, 2))
return 1"""


def spoil(client: redis.Redis, key: str, changes: Mapping[str, Any] | None = None, *, drop: tuple[str, ...] = ()
          ) -> None:
    """Set some fields (HSET's mapping) and remove others (HDEL's names) of the record at key.

    A hash is changed in place; a packed record becomes a hash with the change (see the module's docstring),
    swapped in only if it is still what was read.
    """
    changes = {name: str(value) for name, value in (changes or {}).items()}
    while client.type(key) == "string" and (raw := client.get(key)) is not None:
        record = stored.packed(raw)
        if record is None:
            raise ValueError(f"{key} holds a string that is not a job's record: {raw[:60]!r}")
        record.update(changes)
        for name in drop:
            record.pop(name, None)
        if client.eval(_SWAP, 1, key, raw, *(x for pair in record.items() for x in pair)):
            return
    if changes:
        client.hset(key, mapping=changes)
    if drop:
        client.hdel(key, *drop)


def add(client: redis.Redis, key: str, name: str, n: int) -> int:
    """Add n to a numeric field (absent: 0), as HINCRBY; the new value."""
    value = int(field(client, key, name) or 0) + n
    spoil(client, key, {name: value})
    return value
