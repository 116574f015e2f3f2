"""What many groups cost: ``counts``, claims and cap crossings at 10,000 to 200,000 groups (#17).

    .venv/bin/python bench/groups.py            # a private embedded Valkey, ~2 min
    .venv/bin/python bench/groups.py --quick    # 1/10 of the groups, a smoke run
    EMQ_SRC=/work/base17 .venv/bin/python bench/groups.py   # the same figures for another checkout

Figures, all on a private server so INFO commandstats are ours alone:
- counts: server microseconds per ``counts`` call (commandstats usec / calls over 50 calls) with
  10k, 50k and 200k groups each holding one ready job;
- claim: jobs/s of a claim + finish loop (batches of 100, one client) and server microseconds per job,
  200k jobs in one group, in two groups (fair rotation: one job a group a turn), and each job in a
  group of its own, 20k and 200k of them (every claim also empties a lane, which leaves the ring and
  the lane set: the same work per job whatever the number of groups);
- ring: server milliseconds to finish 1,000 jobs (10 calls of 100) of 1,000 groups at their cap of 1,
  with 50,000 capped groups on the ring (each finish brings a group below its cap: it rejoins the ring).

Not part of ``make bench`` (it would add ~2 min to a 5 min budget); run it by hand.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(os.environ.get("EMQ_SRC") or Path(__file__).resolve().parent.parent)
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "echd_project.settings")
os.environ.setdefault("DEBUG", "1")  # the development settings; the bench serves no page

import django  # noqa: E402
import redis  # noqa: E402

django.setup()

from emq.core import embedded  # noqa: E402
from emq.core.engine import Queue  # noqa: E402
from emq.core.records import MintSpec, Outcome  # noqa: E402

CHUNK = 1000


def spec(i: int, group: str) -> MintSpec:
    return MintSpec(f"j{i}", "bench.noop", "[]", "{}", group, "", 3, 60_000, 1, (1.0, 60.0))


def mint(q: Queue, start: int, n: int, group_of) -> None:
    for s in range(start, start + n, CHUNK * 10):
        q.mint([spec(i, group_of(i)) for i in range(s, min(s + CHUNK * 10, start + n))])


def server_usec(client, run) -> tuple[float, int]:
    """Server µs per script call spent by run(), and the calls (commandstats, scripts only)."""
    client.config_resetstat()
    run()
    stats = client.info("commandstats")
    usec = sum(int(stats.get(f"cmdstat_{c}", {}).get("usec", 0)) for c in ("evalsha", "eval", "fcall"))
    calls = sum(int(stats.get(f"cmdstat_{c}", {}).get("calls", 0)) for c in ("evalsha", "eval", "fcall"))
    return usec, calls


def settle_counters(q: Queue) -> None:
    """Bring a queue's counters up to date where the checkout keeps them (no-op on one that walks)."""
    try:
        from emq.core.engine.keep import KeepOps
    except ImportError:
        return
    k = KeepOps(q.name, prefix=q.keys.prefix, client=q._client)
    while not k.recount_step():
        pass


def counts_cost(client, prefix: str, sizes: list[int]) -> dict:
    q = Queue("cnt", prefix=prefix, client=client)
    out, have = {}, 0
    for size in sizes:
        mint(q, have, size - have, lambda i: f"g{i}")
        have = size
        settle_counters(q)
        assert q.counts().ready == size, q.counts()
        usec, calls = server_usec(client, lambda: [q.counts() for _ in range(50)])
        out[f"{size} groups"] = round(usec / calls, 1)
        print(f"  counts at {size:>7,} groups: {usec / calls:8.1f} us/call", file=sys.stderr)
    return out


def drain(q: Queue) -> tuple[float, float, int]:
    """Claim + finish everything in batches of 100: (jobs/s, server us per job, jobs)."""
    done = 0

    def run():
        nonlocal done
        while claimed := q.bclaim(100, "bench"):
            q.finish([Outcome(c.id, c.token, "completed", "null") for c in claimed])
            done += len(claimed)

    t0 = time.perf_counter()
    usec, _ = server_usec(q.client, run)
    wall = time.perf_counter() - t0
    return done / wall, usec / max(done, 1), done


def claim_cost(client, prefix: str, n: int) -> dict:
    out = {}
    cases = (("1 group", n, lambda i: "one"), ("2 groups", n, lambda i: f"g{i % 2}"),
             (f"{n // 10} groups", n // 10, lambda i: f"g{i}"), (f"{n} groups", n, lambda i: f"g{i}"))
    for label, jobs, group_of in cases:
        q = Queue(f"claim-{uuid.uuid4().hex[:4]}", prefix=prefix, client=client)
        mint(q, 0, jobs, group_of)
        rate, us, done = drain(q)
        assert done == jobs, (done, jobs)
        out[label] = {"jobs_per_s": round(rate), "server_us_per_job": round(us, 2)}
        print(f"  claim+finish, {label:>14}: {rate:9,.0f} jobs/s, {us:6.2f} server us/job", file=sys.stderr)
    return out


def ring_cost(client, prefix: str, groups: int) -> dict:
    q = Queue("capped", prefix=prefix, client=client)
    for s in range(0, groups, CHUNK):
        with client.pipeline(transaction=False) as pipe:
            pipe.hset(q.keys.caps, mapping={f"g{i}": 1 for i in range(s, min(s + CHUNK, groups))})
            pipe.execute()
    mint(q, 0, 2 * groups, lambda i: f"g{i % groups}")
    held = q.bclaim(1000, "bench")  # 1,000 groups reach their cap and leave the ring; the rest stay on it
    assert len({c.group for c in held}) == 1000
    finishing = held[:1000]
    usec, calls = server_usec(client, lambda: [
        q.finish([Outcome(c.id, c.token, "completed", "null") for c in finishing[i : i + 100]])
        for i in range(0, len(finishing), 100)
    ])
    ms = usec / 1000
    print(f"  finish 1,000 jobs, {groups:,} capped groups: {ms:8.1f} server ms ({usec / calls / 1000:.1f} ms/call)",
          file=sys.stderr)
    return {"server_ms_finish_1000": round(ms, 1), "worst_call_ms": round(usec / calls / 1000, 1)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", default=None, help="write the figures as JSON here")
    opts = ap.parse_args()
    scale = 10 if opts.quick else 1
    folder = Path(tempfile.mkdtemp(prefix="emq-bench-groups-"))
    url = embedded.start(folder, persist=False)
    try:
        client = redis.Redis.from_url(url, decode_responses=True)
        prefix = f"emqg-{uuid.uuid4().hex[:6]}"
        print(f"groups bench on {ROOT} ({url})", file=sys.stderr)
        figures = {
            "counts_us": counts_cost(client, prefix, [10_000 // scale, 50_000 // scale, 200_000 // scale]),
            "claim": claim_cost(client, prefix, 200_000 // scale),
            "ring": ring_cost(client, prefix, 50_000 // scale),
        }
        print(json.dumps(figures, indent=2))
        if opts.out:
            Path(opts.out).write_text(json.dumps(figures, indent=2) + "\n")
    finally:
        embedded.stop(folder)
        shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
