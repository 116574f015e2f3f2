"""What EMQ_DURABLE costs an enqueue: one by one and in bulk, off / replica / fsync, side by side.

    .venv/bin/python bench/durable_cost.py [--n 5000] [--bulk 100000] [--rounds 3]

Starts a private Valkey master (AOF on) with one replica from the embedded binary, then for
each mode enqueues n no-op jobs one by one and ``bulk`` jobs with enqueue_many, alternating the
modes round by round (a shared machine drifts), and prints the median jobs/s of each and its
ratio to "off". "fsync" is measured with appendfsync always and everysec (WAITAOF then waits
for the next fsync, ~100 ms, so that mode enqueues only n/100 jobs one by one).
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "echd_project.settings")
MODES = [("off", "", None), ("replica", "replica", None), ("fsync, appendfsync always", "fsync", "always"),
         ("fsync, appendfsync everysec", "fsync", "everysec")]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=5_000, help="jobs enqueued one by one per mode and round")
    ap.add_argument("--bulk", type=int, default=100_000, help="jobs enqueued with enqueue_many per mode and round")
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="emq-durable-cost-"))
    procs, url = start_pair(folder)
    try:
        measure(url, a)
    finally:
        for p in procs:
            p.terminate()
            p.wait()
        shutil.rmtree(folder, ignore_errors=True)


def start_pair(folder: Path) -> tuple[list[subprocess.Popen], str]:
    """A master with AOF on and one replica in sync; returns the processes and the master's URL."""
    import redis

    from emq.core import embedded

    ports = []
    for _ in range(2):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            ports.append(s.getsockname()[1])
    procs = []
    for i, port in enumerate(ports):
        (folder / f"n{i}").mkdir()
        extra = ["--appendonly", "yes"] if i == 0 else ["--appendonly", "no", "--replicaof", "127.0.0.1", str(ports[0])]
        procs.append(subprocess.Popen([embedded.binary(), "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                                       "--dir", str(folder / f"n{i}"), "--logfile", str(folder / f"n{i}.log"), *extra]))
    replica = redis.Redis(port=ports[1], decode_responses=True)
    deadline = time.monotonic() + 20
    while True:
        try:
            if replica.info("replication").get("master_link_status") == "up":
                break
        except redis.ConnectionError:
            pass
        if time.monotonic() > deadline:
            raise RuntimeError("the replica did not sync")
        time.sleep(0.05)
    return procs, f"redis://127.0.0.1:{ports[0]}/0"


def measure(url: str, a) -> None:
    import django

    django.setup()
    from django.conf import settings

    from bench import jobs
    from emq.core import config, connection

    settings.EMQ_URL, settings.EMQ_PREFIX, settings.EMQ_DURABLE_TIMEOUT = url, "durable-cost", 5.0
    connection.reset()
    client = connection.get_client()
    jobs.noop.using(queue="warm").enqueue()
    rates: dict[str, dict[str, list[float]]] = {label: {"one": [], "bulk": []} for label, *_ in MODES}
    for r in range(a.rounds):
        for label, mode, fsync in MODES:
            settings.EMQ_DURABLE = mode
            config.changed()  # set directly, not through override_settings: say so to emq's memo
            client.config_set("appendfsync", fsync or "everysec")
            fn = jobs.noop.using(queue=f"q{r}")
            n = a.n if fsync != "everysec" else max(20, a.n // 100)  # ~100 ms each: a few seconds' worth
            t = time.perf_counter()
            for _ in range(n):
                fn.enqueue()
            rates[label]["one"].append(n / (time.perf_counter() - t))
            t = time.perf_counter()
            fn.enqueue_many([((), {})] * a.bulk)
            rates[label]["bulk"].append(a.bulk / (time.perf_counter() - t))
            client.flushall()
            jobs.noop.using(queue="warm").enqueue()
        sys.stderr.write(f"round {r + 1}/{a.rounds} done\n")
    base = {k: statistics.median(v) for k, v in rates["off"].items()}
    print(f"| EMQ_DURABLE | one by one /s | vs off | bulk /s ({a.bulk:,} jobs) | vs off |\n|---|---|---|---|---|")
    for label, _, _ in MODES:
        one, bulk = statistics.median(rates[label]["one"]), statistics.median(rates[label]["bulk"])
        print(f"| {label} | {one:,.0f} | {one / base['one']:.2f}x | {bulk:,.0f} | {bulk / base['bulk']:.2f}x |")


if __name__ == "__main__":
    main()
