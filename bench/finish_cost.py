"""The finish script's server cost a job, alone: claim every job first, then time only the finishes.

    python bench/finish_cost.py [--tree PATH] [--n 20000] [--batch 10] [--url redis://127.0.0.1:7777/0]

``--tree`` imports emq from another checkout (e.g. main), so two versions can be run in alternating
rounds against the same kind of server; without ``--url`` each run starts a private embedded Valkey.
Prints one JSON line: the finish's server time a job (INFO commandstats, FCALL usec), and its commands
a job (every command inside the scripts counted, as ``bench/run.py``'s cost phase counts them).
For instructions, point ``--url`` at a ``valkey-server`` run under ``valgrind --tool=callgrind
--collect-atstart=no`` and pass ``--callgrind``: the finishes run between ``callgrind_control -i on``
and ``-i off``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tree", default=str(ROOT))
    ap.add_argument("--n", type=int, default=20_000)
    ap.add_argument("--batch", type=int, default=10)
    ap.add_argument("--url")
    ap.add_argument("--callgrind", action="store_true")
    ap.add_argument("--stats", action="store_true",
                    help="every finish carries a tally (one name and the total, 3 run and 2 wait buckets), "
                         "which a worker sends once a second: the difference is a tally's cost")
    opts = ap.parse_args()
    sys.path.insert(0, opts.tree)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "echd_project.settings")
    import django

    django.setup()
    from django.conf import settings

    from emq.core import connection, embedded

    folder = None if opts.url else Path(tempfile.mkdtemp(prefix="emq-finish-cost-"))
    url = opts.url or embedded.start(folder, persist=False)
    try:
        settings.EMQ_URL, settings.EMQ_PREFIX = url, f"fcost-{uuid.uuid4().hex[:8]}"
        connection.reset()
        print(json.dumps(_measure(opts.n, opts.batch, opts.callgrind, opts.stats)))
    finally:
        if folder is not None:
            embedded.stop(folder)
            shutil.rmtree(folder, ignore_errors=True)
    return 0


def _tally(k: int) -> dict:
    """A worker's tally of k completed no-op jobs: one name and the queue's total."""
    slots = {0: k, 1: k, 5: 3, 6: 40, 7: k - 3, 9: 2, 11: 1, 8 + 2 * 12: k - 1, 8 + 2 * 16: 1}
    return {"bench.jobs.noop": slots, "": slots}


def _measure(n: int, batch: int, callgrind: bool, stats: bool) -> dict:
    from emq.core.connection import get_client
    from emq.core.engine import Queue
    from emq.core.records import MintSpec, Outcome

    client = get_client()
    q = Queue(f"fcost-{uuid.uuid4().hex[:6]}")
    specs = [MintSpec(id=uuid.uuid4().hex, name="bench.jobs.noop", args_json="[]", kwargs_json="{}", group="_",
                      due="", max_attempts=3, lease_ms=600_000, max_stalled=1, backoff=(1.0, 60.0))
             for _ in range(n)]
    for start in range(0, n, 1000):
        q.mint(specs[start : start + 1000])
    batches = []
    while claimed := q.bclaim(batch, "bench"):
        batches.append([Outcome(c.id, c.token, "completed", "null") for c in claimed])
    q.finish(batches.pop())  # loads the function outside the count
    client.config_resetstat()
    if callgrind:
        subprocess.run(["callgrind_control", "-i", "on"], check=True, capture_output=True)
    for outcomes in batches:
        if stats:
            q.finish(outcomes, _tally(len(outcomes)))
        else:  # as a version without statistics takes it
            q.finish(outcomes)
    if callgrind:
        subprocess.run(["callgrind_control", "-i", "off"], check=True, capture_output=True)
    stats = client.info("commandstats")
    jobs = sum(len(b) for b in batches)
    fcall = stats.get("cmdstat_fcall", {})
    cmds = sum(v["calls"] for k, v in stats.items() if k != "cmdstat_config|resetstat")
    return {"tree": sys.path[0], "jobs": jobs, "calls": len(batches), "stats": stats, "batch": batch,
            "usec_per_job": fcall.get("usec", 0) / jobs,
            "usec_per_call": fcall.get("usec_per_call"), "cmds_per_job": cmds / jobs,
            "by_command": {k[8:]: v["calls"] for k, v in stats.items()}}


if __name__ == "__main__":
    sys.exit(main())
