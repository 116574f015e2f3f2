"""What a job's record costs the server, stored as today's hash or as one packed value (issue 33's question).

Not emq's code: two Lua scripts that do to n job records what a claim and a finish do to them, on a private
server, in batches of BATCH a call (a worker's batch), so that the record's share of a drain is measured apart
from the rest of the claim and the finish (lanes, leases, counters, flows):

* hash: ``HGETALL`` the job (the claim hands it to the worker), ``HSET`` five fields (state, attempts, claimed,
  lease_until, worker); then the finish's ``HMGET`` of five fields and ``HSET`` of two.
* packed: the record is one msgpack array in fixed positions (cmsgpack, built into the server's Lua); the
  claim ``GET``s it, unpacks, changes five positions, packs and ``SET``s it, and hands the worker the packed
  value; the finish does the same for two.

* fixed and batched: a fixed-width header of the fields a run changes in front of the packed value, read and
  written in place (``GET``, ``SETRANGE``, ``GETRANGE``) a job at a time, or a call's records with one ``MGET``
  and one ``MSET`` for the claim and for the finish.

An empty script call of BATCH keys is measured beside them: the floor under both. ``bytes`` writes the same
records as a key each (hash, packed) and as packed values in hashes of BUCKET fields (no key a job), and
reports ``used_memory`` a record.
"""

from __future__ import annotations

import functools
import time

import redis

from bench import wire
from bench.harness import Ctx, server_cpu

BATCH = 10  # jobs a call, as a worker's claim and finish at concurrency 10
CALLS = 100  # script calls a pipeline
BUCKET = 100  # records a hash in the bucketed layout (under hash-max-listpack-entries: a listpack)
STOCK_LISTPACK_VALUE = 64  # hash-max-listpack-value's default: a server not configured for emq's own embedded one

HASH = """
local now, out = tonumber(ARGV[1]), {}
for i, key in ipairs(KEYS) do
  out[i] = redis.call('HGETALL', key)
  redis.call('HSET', key, 'state', 'active', 'attempts', 1, 'claimed', now, 'lease_until', now + 30000,
    'worker', ARGV[2])
end
for _, key in ipairs(KEYS) do
  redis.call('HMGET', key, 'state', 'attempts', 'notify', 'unique', 'unknown')
  redis.call('HSET', key, 'state', 'completed', 'finished', now)
end
return out
"""

PACKED = """
local now, out = tonumber(ARGV[1]), {}
for i, key in ipairs(KEYS) do
  local r = cmsgpack.unpack(redis.call('GET', key))
  r[3], r[7], r[8], r[9], r[10] = 'active', 1, now, now + 30000, ARGV[2]
  out[i] = cmsgpack.pack(r)
  redis.call('SET', key, out[i])
end
for _, key in ipairs(KEYS) do
  local r = cmsgpack.unpack(redis.call('GET', key))
  r[3], r[11] = 'completed', now
  redis.call('SET', key, cmsgpack.pack(r))
end
return out
"""

# fixed: a header of fixed width in front of the packed value (state 1, attempts 4, claimed 13, lease_until 13,
# finished 13, worker 16): the claim GETs the value and SETRANGEs the header; the finish reads the state and
# attempts with GETRANGE and SETRANGEs state and finished. No decode or encode in the server.
FIXED = """
local now, out = ARGV[1], {}
local head = 'a' .. '0001' .. now .. (now + 30000) .. string.rep('0', 13) .. string.format('%-16s', ARGV[2])
for i, key in ipairs(KEYS) do
  out[i] = redis.call('GET', key)
  redis.call('SETRANGE', key, 0, head)
end
for _, key in ipairs(KEYS) do
  redis.call('GETRANGE', key, 0, 4)
  redis.call('SETRANGE', key, 0, 'c')
  redis.call('SETRANGE', key, 31, now)
end
return out
"""
HEADER = 60

# batched: the fixed header's record, but a call's records are read with one MGET and written with one MSET (a
# job's key and its new value): four commands a call, none a job. Each command a script calls costs the server
# about as much again as a small command itself (its arguments and reply converted, the call's checks), so the
# calls a job, not the bytes, bound what a claim and a finish can reach (docs/reference/performance.md).
BATCHED = """
local now, out, kv = ARGV[1], {}, {}
local head = 'a' .. '0001' .. now .. (now + 30000) .. string.rep('0', 13) .. string.format('%-16s', ARGV[2])
local got = redis.call('MGET', unpack(KEYS))
for i, key in ipairs(KEYS) do
  out[i] = got[i]
  kv[2 * i - 1], kv[2 * i] = key, head .. string.sub(got[i], HEADER + 1)
end
redis.call('MSET', unpack(kv))
got = redis.call('MGET', unpack(KEYS))
for i = 1, #KEYS do
  local v = got[i]
  if string.sub(v, 1, 5) == 'a0001' then kv[2 * i] = 'c' .. string.sub(v, 2, 31) .. now .. string.sub(v, 45) end
end
redis.call('MSET', unpack(kv))
return out
""".replace("HEADER", str(HEADER))

# bucketed: batched's records as fields of hashes of BUCKET (no key a job; bytes_per_record's layout), a call's jobs
# in one bucket (a bulk mint's consecutive jobs would share one): KEYS[1] the bucket, ARGV[3..] the fields. Its
# HMGET and HSET find each field by a scan of the listpack: what buckets would cost a claim and a finish.
BUCKETED = """
local now, out, kv, fields = ARGV[1], {}, {}, {}
local head = 'a' .. '0001' .. now .. (now + 30000) .. string.rep('0', 13) .. string.format('%-16s', ARGV[2])
for i = 3, #ARGV do fields[i - 2] = ARGV[i] end
local got = redis.call('HMGET', KEYS[1], unpack(fields))
for i, f in ipairs(fields) do
  out[i] = got[i]
  kv[2 * i - 1], kv[2 * i] = f, head .. string.sub(got[i], HEADER + 1)
end
redis.call('HSET', KEYS[1], unpack(kv))
got = redis.call('HMGET', KEYS[1], unpack(fields))
for i = 1, #fields do
  local v = got[i]
  if string.sub(v, 1, 5) == 'a0001' then kv[2 * i] = 'c' .. string.sub(v, 2, 31) .. now .. string.sub(v, 45) end
end
redis.call('HSET', KEYS[1], unpack(kv))
return out
""".replace("HEADER", str(HEADER))

EMPTY = "return #KEYS"
POSITIONS = ("fn", "group", "state", "lease", "created", "v")  # then attempts, claimed, lease_until, worker, finished


def claim_finish(ctx: Ctx, fields: dict, n: int) -> dict:
    """Server CPU µs a job of a claim and a finish of its record alone: hash, packed, fixed header, the fixed
    header read and written a call at a time (batched), the same in hashes of BUCKET (bucketed: the fields
    HMGET and HSET find by a scan while the hash is a listpack, as on a server at hash-max-listpack-value
    1024, emq's embedded one; at the default 64 these records make each bucket a hash table), and the
    empty call's."""
    flat = [x for kv in fields.items() for x in kv]
    raw = redis.Redis.from_url(ctx.url)  # msgpack is bytes, not text: this client does not decode replies
    # packed by the server's own cmsgpack, as a script would write it
    record = raw.eval("return cmsgpack.pack(ARGV)", 0, *[fields.get(k, "") for k in POSITIONS], 0, 0, 0, "", 0)
    fixed = b"r" + b"0" * (HEADER - 1) + record
    out = {}
    for kind, script, value in (("hash", HASH, None), ("packed", PACKED, record), ("fixed", FIXED, fixed),
                                ("batched", BATCHED, fixed), ("empty", EMPTY, b"")):
        keys = [f"{ctx.prefix}:record:{kind}:{i}" for i in range(n)]
        out[kind] = _timed(ctx, raw, script, [_writer(k, value, flat) for k in keys], keys,
                           lambda sha, keys=keys: [_caller(sha, keys[i : i + BATCH]) for i in range(0, n, BATCH)])
    # BATCH divides BUCKET: a call's records share a bucket; a record's field is an id's last 24 characters
    buckets, ids = [f"{ctx.prefix}:record:bucketed:{i // BUCKET}" for i in range(n)], [f"{i:024d}" for i in range(n)]
    out["bucketed"] = _timed(
        ctx, raw, BUCKETED, [_filler(buckets[i], ids[i], fixed) for i in range(n)], sorted(set(buckets)),
        lambda sha: [_bucket_caller(sha, buckets[i], ids[i : i + BATCH]) for i in range(0, n, BATCH)])
    raw.close()
    return out


def _timed(ctx: Ctx, raw: redis.Redis, script: str, writes: list, written: list[str], calls_of) -> float:
    """Server CPU µs a record of script's calls (calls_of(sha)) over the records writes make; written deleted after."""
    _pipelined(raw, writes)
    calls = calls_of(raw.script_load(script))
    cpu0 = server_cpu(ctx)
    _pipelined(raw, calls)
    cpu = (server_cpu(ctx) - cpu0) * 1e6 / len(writes)
    _unlink(ctx, written)
    return cpu


def bytes_per_record(ctx: Ctx, keys: list[str], fields: dict, stored: str | None = None) -> dict:
    """``used_memory`` a record for len(keys) records: a key each as a hash, as a packed value, and packed values
    as fields of hashes of BUCKET (the key's id the field). The keys are deleted after each.

    stored, the record as the queue holds it (format 2), is written too: in a key each (the floor of a layout of
    a key a job, whatever its encoding) and in hashes of BUCKET. A hash stays a listpack (a few bytes a field)
    only while each value is at most the server's ``hash-max-listpack-value`` (64 by default): a bucket of
    records longer than that is a hash table, dearer a field than the listpack, so the record's length against
    that limit decides what buckets save (``limit``, ``stored_len``; "stored_bucketed_stock": at the default limit,
    set for that layout alone on this private server)."""
    value, flat = wire.packed(fields), [x for kv in fields.items() for x in kv]
    n, out = len(keys), {}
    buckets = [f"{keys[0]}:bucket:{i // BUCKET}" for i in range(0, n, BUCKET)]
    limit = int(ctx.client.config_get("hash-max-listpack-value").get("hash-max-listpack-value") or STOCK_LISTPACK_VALUE)

    def in_keys(v):
        return lambda p, i: p.execute_command("SET", keys[i], v)

    def in_buckets(v):
        return lambda p, i: p.execute_command("HSET", buckets[i // BUCKET], keys[i][-24:], v)

    # kind: (write record i, the keys written, the hash-max-listpack-value to write them under)
    layouts = {"hash": (lambda p, i: p.execute_command("HSET", keys[i], *flat), keys, limit),
               "packed": (in_keys(value), keys, limit), "bucketed": (in_buckets(value), buckets, limit)}
    if stored:
        layouts.update(stored=(in_keys(stored), keys, limit), stored_bucketed=(in_buckets(stored), buckets, limit),
                       stored_bucketed_stock=(in_buckets(stored), buckets, STOCK_LISTPACK_VALUE))
        out.update(stored_len=len(stored.encode()), packed_len=len(value.encode()), limit=limit,
                   stock_limit=STOCK_LISTPACK_VALUE)
    for kind, (write, written, under) in layouts.items():
        ctx.client.config_set("hash-max-listpack-value", under)
        try:
            before = ctx.client.info("memory")["used_memory"]
            _pipelined(ctx.client, [functools.partial(write, i=i) for i in range(n)])
            out[kind] = (ctx.client.info("memory")["used_memory"] - before) / n
            _unlink(ctx, written)
        finally:
            ctx.client.config_set("hash-max-listpack-value", limit)
    return out


def _writer(key: str, value: bytes | None, flat: list):
    return lambda p: p.execute_command("HSET", key, *flat) if value is None else p.set(key, value)


def _caller(sha: str, keys: list[str]):
    return lambda p: p.evalsha(sha, len(keys), *keys, int(time.time() * 1000), "w1")


def _filler(bucket: str, field: str, value: bytes):
    return lambda p: p.hset(bucket, field, value)


def _bucket_caller(sha: str, bucket: str, fields: list[str]):
    return lambda p: p.evalsha(sha, 1, bucket, int(time.time() * 1000), "w1", *fields)


def _pipelined(client, calls: list) -> None:
    for i in range(0, len(calls), CALLS):
        pipe = client.pipeline(transaction=False)
        for call in calls[i : i + CALLS]:
            call(pipe)
        pipe.execute()


def _unlink(ctx: Ctx, keys: list[str]) -> None:
    for i in range(0, len(keys), 10_000):
        ctx.client.unlink(*keys[i : i + 10_000])
