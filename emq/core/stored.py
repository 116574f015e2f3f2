"""The stored job: the one owner of how a job is written, read back, and handed to the mint scripts.

A job is the hash ``<ns>job:<id>``, written by ``put_job`` in ``_mint.lua`` (``mint_many.lua``
follows its rules) from the ARGV rows built here, and read back by Python only through here: ``ask``
queues the read of a job's fields on a pipeline and ``answer`` decodes its reply, ``filled`` decodes a
whole hash. The scripts read and write a job only through ``emq/lua/_record.lua``, the record's owner
in Lua, so a later encoding (a packed value) changes this module and that file, nothing else.

**Format versions.** A job stores its format in the field ``v`` (FORMAT); a hash without one was
written by v0.2.0, format "0". A format is its fields *and* its table of defaults: put_job leaves a
field out while it holds its default (a no-op job stores ~110 bytes less), so a default is part of
what every stored job means. Reading older formats:

1. An absent field takes the default of the job's own format, ``DEFAULTS[v]``, never the newest:
   changing a default or what a field holds makes a new format whose table is added beside the old
   ones, which stay; a job minted before the change runs as it was minted. ``due`` left out is
   ``created`` in every format.
2. A new format ships in two releases, one that reads it and then one that writes it, so that during
   a rolling deploy every worker reads what any web process writes.
3. A format a reader does not know (written by a release that skipped rule 2) is read with the
   newest defaults it knows.

Formats: "0" (v0.2.0) and "1" (the release after it: format 0 and its ``v``, nothing else, so a v0.2.0
worker still running in a deploy reads it) share one table. The scripts keep the same tables
(``FORMAT``, ``DEFAULT``, and ``DEFAULTS`` made by ``defaults_of`` in ``_defaults.lua``; a test compares
them). The ``v`` costs a queued job under a byte (its hash stays in its allocation size) and a claim
or a mint a little server time (docs/reference/performance.md). Format "2" (this release reads it and
writes it only under EMQ_RECORD_FORMAT = "2", rule 2) has the same table and another encoding: one
packed string, not a hash (``packed``; emq/lua/_packed.lua writes it), whose head carries its ``v``.

A default is a constant, not a setting: under EMQ_MAX_ATTEMPTS = 5 each job stores its 5, and runs
with what it was minted with whatever the settings say when it runs.

**Encrypted jobs** (``encrypt=True``, EMQ_ENCRYPT): how their fields hold sealed values is ``encrypted``'s.
Readers here get those fields opened (``answer``, ``read_all``), or "encrypted" when no key opens them;
``read_raw`` reads fields exactly as stored (``rekey``).
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

import redis

from . import config
from .encrypted import KWARGS, OPENED, opened

if TYPE_CHECKING:
    from .records import MintSpec

FORMAT = "1"  # what put_job writes in a job's field VERSION (a hash; "2": packed, EMQ_RECORD_FORMAT)
VERSION = "v"
SEP = "\x1f"  # format "2": a record is one string (``packed``), its parts joined by SEP
PACKED = f"{SEP}v{SEP}2{SEP}"  # how a packed record starts
# Its head's slots; the second ("") holds marks, no field (_packed.lua's MARK), which only the Lua writers use;
HEAD = ("state", "", "attempts", "finished", "group", "lease", "claimed", "lease_until", "worker")
_TOKEN, _GROUP, _LEASE = (3 + HEAD.index(name) for name in ("attempts", "group", "lease"))  # places in its split
BEFORE = "0"  # the format of a job without VERSION: v0.2.0's
_V0 = {"args": "[]", "kwargs": "{}", "attempts": "0", "max_attempts": "3", "max_stalled": "1", "backoff": "1,300",
       "timeout": "3600000,0"}
DEFAULTS: dict[str, dict[str, str]] = {BEFORE: _V0, "1": _V0, "2": _V0}  # format -> the values its jobs leave out
DUE, CREATED = "due", "created"  # a job's due time, when left out, is its creation time
WHOLE = (*_V0, DUE)

# mint.lua's fields of one job, in its ARGV order (JOB_FIELDS in _mint.lua): only this module indexes a row.
MINT_FIELDS = ("id", "if_absent", "fn", "args", "kwargs", "group", "due", "max_attempts", "lease", "max_stalled",
               "backoff", "origin", "priority", "meta", "timeout")


def defaults(version: str | None) -> dict[str, str]:
    """The defaults a job of this format was written against (rules 1 and 3 above)."""
    return DEFAULTS.get(version or BEFORE) or DEFAULTS[FORMAT]


# -- reading back ----------------------------------------------------------------------------


def filled(h: dict[str, str | None], fields: Iterable[str] = WHOLE) -> dict[str, str | None]:
    """A job's fields as read (a whole hash, or an ``answer``) with the left-out ones at the defaults of
    its format; fields: those to fill. A job that does not exist (nothing read) stays as read."""
    if not any(v is not None for v in h.values()):
        return h
    out = dict(h)
    table = defaults(out.get(VERSION))
    for name in fields:
        if out.get(name) is None:
            default = out.get(CREATED) if name == DUE else table.get(name)
            if default is not None:
                out[name] = default
    return out


def reads(fields: Sequence[str]) -> list[str]:
    """The stored fields to read for these: the format, created when due is asked for, and kwargs (whether
    the job is encrypted) when a field an encrypted job seals is."""
    extra = [VERSION] if VERSION not in fields else []
    if DUE in fields and CREATED not in fields:
        extra.append(CREATED)
    if KWARGS not in fields and any(name in OPENED for name in fields):
        extra.append(KWARGS)
    return [*fields, *extra]


def packed(raw: Any) -> dict[str, str] | None:
    """A packed record's fields (format "2", one string: PACKED, the values of HEAD's slots in its order, ""
    for absent, then SEP name SEP value for each other field), or None when raw is not one. ``_record.lua``
    writes it and keeps the same layout."""
    if not isinstance(raw, str) or not raw.startswith(PACKED):
        return None
    items = raw.split(SEP)
    if len(items) < 3 + len(HEAD) or (len(items) - len(HEAD)) % 2 == 0:
        return None
    out = {VERSION: "2"}
    out.update((name, value) for name, value in zip(HEAD, items[3 : 3 + len(HEAD)], strict=True) if value and name)
    rest = items[3 + len(HEAD) :]
    out.update(zip(rest[::2], rest[1::2], strict=True))
    return out


def claimed_row(job_id: str, record: str) -> tuple:
    """A bclaim reply's two items for a packed record the claim leased by its head (bclaim.lua's lease_packed: the
    record as leased) as the seven Claimed.from_reply decodes a hash's, but for the seventh: the fixed-form fields
    (lease, max_attempts, backoff, due, timeout, spared, meta) as a tuple, not joined by "|" to be split again.
    On the worker's hot path: one split, one dict, the defaults of format "2" inline."""
    items = record.split(SEP)
    h = dict(zip(items[3 + len(HEAD) :: 2], items[4 + len(HEAD) :: 2], strict=False))
    d = DEFAULTS["2"]
    g = h.get
    fixed = (items[_LEASE], g("max_attempts") or d["max_attempts"], g("backoff") or d["backoff"], g(DUE) or g(CREATED),
             g("timeout") or d["timeout"], g("spared") or "", g("meta") or "")
    return job_id, items[_TOKEN], g("fn"), g("args") or d["args"], g("kwargs") or d["kwargs"], items[_GROUP], fixed


def packed_first() -> bool:
    """Whether a read asks a job's key with GET (a packed record) before a hash command: when this process writes
    format "2", most jobs it reads are packed; a job in the other form costs one more round trip (``unpacked``)."""
    return config.get("EMQ_RECORD_FORMAT") == "2"


def ask(pipe: Any, key: str, fields: Sequence[str]) -> None:
    """Queue on a pipeline the read of these fields of the job at key (``answer`` decodes its reply, after
    ``unpacked(…, reads(fields))`` on the pipeline's replies, executed with raise_on_error=False).
    Ask for a field every job has (fn, state) beside ones that may be left out: a job that does not exist
    answers all None."""
    _ask(pipe, key, reads(fields))


def _ask(pipe: Any, key: str, hashed: Sequence[str] | None, get: bool | None = None) -> None:
    """GET when get (by default ``packed_first``), else the hash's fields named (None: all)."""
    if packed_first() if get is None else get:
        pipe.get(key)
    elif hashed is None:
        pipe.hgetall(key)
    else:
        pipe.hmget(key, list(hashed))


def answer(fields: Sequence[str], values: Any) -> dict[str, str | None]:
    """The reply to ``ask(…, fields)`` as fields to values, the left-out ones at their format's defaults."""
    record = packed(values)
    asked = reads(fields)
    if record is not None:
        values = [record.get(name) for name in asked]
    elif values is None:  # GET of a key that is gone
        values = [None] * len(asked)
    h = opened(filled(dict(zip(asked, raised(values), strict=True)), fields))
    return {name: h.get(name) for name in fields}


def ask_all(pipe: Any, key: str) -> None:
    """Queue the read of every stored field of the job at key (``answer_all`` decodes the reply, after
    ``unpacked`` as for ``ask``)."""
    _ask(pipe, key, None)


def answer_all(reply: Any) -> dict[str, str]:
    """The reply of an ``ask_all`` as ``read_all`` gives it: left-out fields at their defaults, sealed ones opened."""
    record = packed(reply)
    return opened(filled(raised(reply or {}) if record is None else record))


def unpacked(client: Any, keys: Sequence[str], replies: list[Any], hashed: Sequence[str] | None = None) -> list[Any]:
    """A pipeline's replies to ``ask``/``ask_all`` (executed with raise_on_error=False), each in the form its key
    holds: a reply that met the other form (WRONGTYPE) is read again in one more round trip for them all, as a
    packed record's string or as the hash's fields (hashed: the names its read asks, ``reads``; None: all). A
    string that is not a record answers as a hash read of it does: WRONGTYPE, raised by ``raised``."""
    first = packed_first()
    wrong = [i for i, r in enumerate(replies) if isinstance(r, redis.ResponseError) and "WRONGTYPE" in str(r)]
    if wrong:
        pipe = client.pipeline(transaction=False)
        for i in wrong:
            _ask(pipe, keys[i], hashed, get=not first)
        for i, raw in zip(wrong, pipe.execute(raise_on_error=False), strict=True):
            if first or packed(raw) is not None:
                replies[i] = raw
    foreign = redis.ResponseError("WRONGTYPE Operation against a key holding the wrong kind of value")
    return [foreign if first and isinstance(r, str) and packed(r) is None else r for r in replies]


def raised(reply: Any) -> Any:
    """A reply, or its error raised (a key that holds neither a hash nor a packed record)."""
    if isinstance(reply, Exception):
        raise reply
    return reply


def read(client: Any, keys: Sequence[str], fields: Sequence[str]) -> list[dict[str, str | None]]:
    """These fields of many jobs, in one pipelined round trip; a job that is gone reads as all None."""
    if not keys:
        return []
    pipe = client.pipeline(transaction=False)
    for key in keys:
        ask(pipe, key, fields)
    replies = unpacked(client, keys, pipe.execute(raise_on_error=False), reads(fields))
    return [answer(fields, values) for values in replies]


def read_all(client: Any, key: str) -> dict[str, str]:
    """Every stored field of one job with the left-out ones at their defaults, its sealed ones opened
    ({}: no such job)."""
    return answer_all(read_all_raw(client, [key])[0])


def read_raw(client: Any, keys: Sequence[str], fields: Sequence[str]) -> list[Any]:
    """These fields of many jobs exactly as stored (sealed ones sealed, left-out ones None), one round trip;
    the error in place of a key that holds no record."""
    pipe = client.pipeline(transaction=False)
    for key in keys:
        _ask(pipe, key, fields)
    replies = unpacked(client, keys, pipe.execute(raise_on_error=False), fields) if keys else []
    return [[record.get(f) for f in fields] if (record := packed(r)) is not None else [None] * len(fields)
            if r is None else r for r in replies]


def read_all_raw(client: Any, keys: Sequence[str]) -> list[Any]:
    """Every field of many jobs exactly as stored (the journal's too), one round trip; the error in place of a
    key that holds no record."""
    pipe = client.pipeline(transaction=False)
    for key in keys:
        ask_all(pipe, key)
    replies = unpacked(client, keys, pipe.execute(raise_on_error=False)) if keys else []
    return [record if (record := packed(r)) is not None else {} if r is None else r for r in replies]


# -- mint's rows -------------------------------------------------------------------------------


def mint_row(spec: MintSpec) -> list[Any]:
    """mint.lua's fields of one job (MINT_FIELDS), from its spec."""
    return [spec.id, "1" if spec.if_absent else (spec.unique or "0"), spec.name, spec.args_json, spec.kwargs_json,
            spec.group, spec.due, spec.max_attempts, spec.lease_ms, spec.max_stalled, _pair(*spec.backoff), spec.origin,
            int(spec.priority), spec.meta, _pair(int(spec.timeout_ms), int(spec.soft_timeout_ms))]


def mint_filler(spec: MintSpec) -> Callable[[str, str, str, str, str], list[Any]]:
    """A maker of mint rows of jobs like spec but for their id, arguments, group and due spec: what the
    jobs share is worked out once (an enqueue's plan keeps one per job function)."""
    flag = "1" if spec.if_absent else (spec.unique or "0")
    name = spec.name
    tail = (spec.max_attempts, spec.lease_ms, spec.max_stalled, _pair(*spec.backoff), spec.origin, int(spec.priority),
            spec.meta, _pair(int(spec.timeout_ms), int(spec.soft_timeout_ms)))

    def row(job_id: str, args_json: str, kwargs_json: str, group: str, due: str) -> list[Any]:
        return [job_id, flag, name, args_json, kwargs_json, group, due, *tail]

    return row


def mint_argv(rows: Sequence[list[Any]]) -> list[Any]:
    """mint.lua's (and mint_one.lua's) ARGV for these rows: their count, then each row's fields."""
    if len(rows) == 1:
        return [1, *rows[0]]
    return [len(rows), *itertools.chain.from_iterable(rows)]


def chosen(rows: Sequence[list[Any]]) -> list[tuple[str, str]]:
    """(id, due spec) of the rows whose id a caller chose (``job_id=``): the ones ``idindex`` notes."""
    return [(row[0], row[6]) for row in rows if row[1] == "1"]


def plain(row: list[Any]) -> bool:
    """Whether a row takes no uniqueness spec (its if_absent is "0" or "1"): mint_one.lua can mint it."""
    return len(row[1]) == 1


def mint_many_head(spec: MintSpec, group: str) -> list[Any]:
    """mint_many.lua's ARGV[2..11], what a chunk's jobs share: spec's fields but its id, arguments and due;
    group "" when each job brings its own."""
    row = mint_filler(spec)("", "", "", group, "")
    return [row[2], row[5], *row[7:]]


@functools.lru_cache(maxsize=256)
def _pair(a: float, b: float) -> str:
    """"<a>,<b>" as a job stores its backoff and its time limits, formatted once per distinct value
    (every job of a function shares them); whole numbers without ".0": 4 bytes less a job."""
    return ",".join(str(int(x)) if float(x).is_integer() and abs(x) < 1e15 else repr(float(x)) for x in (a, b))
