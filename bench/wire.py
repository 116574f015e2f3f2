"""What the wire and the server allow, measured in the same run as emq's enqueue.

* ``raw_block``: redis-py's ``evalsha`` of a trivial script, one call after the other, on emq's
  own client: the ceiling of a one-by-one enqueue from one Python process (one round trip each).
* ``pipelined``: the same script, batches of 1,000 calls packed once and replayed on one connection,
  two batches on the wire at once (the next waits in the server's buffer while it runs one), so the
  client does as little as redis-py can and the server never waits for it. A bulk enqueue sends its
  chunks of 1,000 jobs the same way (one connection, two deep: engine/mint.py). Its wall rate is
  often bound by reading the replies in Python; on a private server ``limit_per_s`` is the server's
  own bound, calls per second of Valkey CPU (INFO cpu) while the loop ran, which is what a bulk
  enqueue competes with. The enqueue phase alternates blocks of it with blocks of bulk enqueue.

The trivial script is ``return ARGV[1]`` with one key under the benchmark's prefix: a script
call with no work in it, so each figure is the price of the call itself.
"""

from __future__ import annotations

import time

from bench.harness import Ctx, reset_stats, server_cpu

TRIVIAL = "return ARGV[1]"
CHUNK = 1_000  # calls per pipelined batch, as many as a bulk enqueue's mint chunk has jobs


def trivial(ctx: Ctx) -> tuple[str, str]:
    """The trivial script's sha, loaded, and the key it is called with."""
    return ctx.client.script_load(TRIVIAL), f"{ctx.prefix}:wire"


def raw_block(ctx: Ctx, sha: str, key: str, n: int) -> float:
    """Seconds ``client.evalsha`` takes for n calls one by one. The enqueue phase alternates blocks
    of these with blocks of enqueues, so that both sides of the ratio see the same load."""
    client = ctx.client
    t = time.perf_counter()
    for _ in range(n):
        client.evalsha(sha, 1, key, "x")
    return time.perf_counter() - t


def pipelined(ctx: Ctx, n: int) -> dict:
    """Calls per second of a pipelined loop: the wall rate, and the server's CPU bound on a private server.

    Also the sums a caller adds up over blocks: ``calls``, ``wall_s``, and on a private server
    ``server_cpu_s`` and ``script_usec`` (INFO commandstats, EVALSHA usec)."""
    client = ctx.client
    sha, key = client.script_load(TRIVIAL), f"{ctx.prefix}:wire"
    rounds = max(1, n // CHUNK)
    if ctx.private:
        reset_stats(ctx)
    cpu0 = server_cpu(ctx) if ctx.private else 0.0
    conn = client.connection_pool.get_connection()
    try:
        packed = conn.pack_commands([("EVALSHA", sha, 1, key, "x")] * CHUNK)
        t = time.perf_counter()
        _stream(conn, [packed] * rounds)
        wall_s = time.perf_counter() - t
    finally:
        client.connection_pool.release(conn)
    calls = rounds * CHUNK
    out = {"calls": calls, "wall_s": wall_s, "wall_per_s": calls / wall_s, "limit_per_s": calls / wall_s}
    if ctx.private:
        stats = ctx.client.info("commandstats").get("cmdstat_evalsha", {})
        out["server_cpu_s"] = max(server_cpu(ctx) - cpu0, 1e-6)
        out["script_usec"] = int(stats.get("usec", 0))
        out["server_cpu_per_s"] = calls / out["server_cpu_s"]
        out["usec_per_call"] = float(stats.get("usec_per_call", 0.0))
        out["limit_per_s"] = out["server_cpu_per_s"]
    return out


def hash_floor(ctx: Ctx, fields: dict, n: int) -> dict:
    """Server CPU per job of the least a hash per job costs: n pipelined ``HSET``s, each of a new key
    with ``fields`` (a job's hash as a bulk mint wrote it), two batches of CHUNK on the wire, no script.

    A bulk enqueue writes one such hash a job and more (the lane, counters, the call's own work), so
    what it can reach against the pipelined no-op call is bounded by this. Private server only.
    ``server_cpu_s`` and ``calls`` are sums a caller adds up over blocks; the keys are deleted after.
    """
    flat = [x for kv in fields.items() for x in kv]
    return _floor(ctx, n, lambda key: ("HSET", key, *flat))


def packed_floor(ctx: Ctx, fields: dict, n: int) -> dict:
    """``hash_floor`` for the same job stored as one packed value (``packed``): n pipelined ``SET``s. What a
    record of one value would bound a bulk enqueue by, against the hash's bound."""
    value = packed(fields)
    return _floor(ctx, n, lambda key: ("SET", key, value))


def packed(fields: dict) -> str:
    """A job's fields as one value: the values in a fixed order, the names left to the format (as a record
    with a version would), so what it measures is the least a packed job can hold."""
    return "\x1f".join(str(v) for v in fields.values())


def _floor(ctx: Ctx, n: int, command) -> dict:
    conn = ctx.client.connection_pool.get_connection()
    base = f"{ctx.prefix}:floor:{time.time_ns()}:"
    rounds = max(1, n // CHUNK)
    try:
        batches = [conn.pack_commands([command(f"{base}{r}:{i}") for i in range(CHUNK)]) for r in range(rounds)]
        cpu0 = server_cpu(ctx)
        _stream(conn, batches)
        cpu = max(server_cpu(ctx) - cpu0, 1e-6)
    finally:
        ctx.client.connection_pool.release(conn)
    for r in range(rounds):
        ctx.client.delete(*[f"{base}{r}:{i}" for i in range(CHUNK)])
    return {"calls": rounds * CHUNK, "server_cpu_s": cpu}


def _stream(conn, batches: list) -> None:
    """Send packed batches of CHUNK commands two on the wire at once (the next waits in the server's
    buffer while it runs one), reading each batch's replies."""
    conn.send_packed_command(batches[0])
    for r in range(len(batches)):
        if r + 1 < len(batches):
            conn.send_packed_command(batches[r + 1])
        for _ in range(CHUNK):
            conn.read_response()
