"""A job's stored record as a test reads and spoils it, in either format (a hash, or format "2"'s packed string).

The suite runs under EMQ_RECORD_FORMAT "1" and again under "2" (.ci/run), so a test that looks at a job's
fields, or changes them to play a fault, goes through here, never a hash command on the job's key: reads through
``emq.core.stored`` (the record's one owner in Python), exactly as stored (left-out fields absent, sealed ones
sealed); writes as a fault would leave the record. A packed record that a test changes stays packed (``pack``,
the layout ``stored.packed`` reads), so a fault meets format 2's own paths; one that can no longer be packed (a
value with the separator, a v other than "2" or none) is written back as a hash, which every release reads.
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


def pack(record: Mapping[str, str]) -> str | None:
    """A record's fields packed as emq/lua/_packed.lua writes them (stored.packed's layout: PACKED, the head's
    values, then name and value of each other field), or None when they cannot be (v is not "2", a value holds
    the separator). ``stored.packed`` of the result is record again, in its order."""
    if record.get(stored.VERSION) != "2" or any(stored.SEP in str(v) for v in record.values()):
        return None
    rest = [x for name, value in record.items() if name not in stored.HEAD and name != stored.VERSION
            for x in (name, str(value))]
    head = [str(record.get(name, "")) if name else _marks(record) for name in stored.HEAD]
    return stored.PACKED + stored.SEP.join(head + rest)


def _marks(record: Mapping[str, str]) -> str:
    """The head's marks (_packed.lua's rec_marks): a letter for each of these fields present, in this order."""
    marked = [("priority", "p"), ("notify", "n"), ("unique", "u"), ("unknown", "k"), ("result", "r")]
    return "".join("s" if m == "u" and str(record[f]).startswith("s") else m for f, m in marked if record.get(f))


# Swap a packed record for its new form, unless it changed since it was read (then 0: read again).
_SWAP = """if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
if #ARGV == 2 then redis.call('SET', KEYS[1], ARGV[2]) else redis.call('HSET', KEYS[1], unpack(ARGV, 2)) end
return 1"""


def spoil(client: redis.Redis, key: str, changes: Mapping[str, Any] | None = None, *, drop: tuple[str, ...] = ()
          ) -> None:
    """Set some fields (HSET's mapping) and remove others (HDEL's names) of the record at key.

    A hash is changed in place; a packed record stays packed when it can (see the module's docstring), swapped
    in only if it is still what was read.
    """
    changes = {name: str(value) for name, value in (changes or {}).items()}
    while client.type(key) == "string" and (raw := client.get(key)) is not None:
        record = stored.packed(raw)
        if record is None:
            raise ValueError(f"{key} holds a string that is not a job's record: {raw[:60]!r}")
        record.update(changes)
        for name in drop:
            record.pop(name, None)
        new = pack(record)
        if client.eval(_SWAP, 1, key, raw, *([new] if new is not None else (x for kv in record.items() for x in kv))):
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
