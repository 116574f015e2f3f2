"""``make bench``: emq's numbers against the peers', on a private embedded Valkey by default.

    python bench/run.py                 # every phase, ~5 minutes, private Valkey in a temp folder
    python bench/run.py --quick         # a smoke run with small counts
    python bench/run.py --url redis://127.0.0.1:6379/15 [--only drain,latency]
    python bench/run.py --url redis://127.0.0.1:7777/0 --private   # a server of your own

Progress goes to stderr; one table goes to stdout; every figure goes to bench/results.json.
Against --url everything lives under a fresh key prefix that is deleted after; INFO-based
figures (commands per job, idle commands, memory) are only taken on a private server.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "echd_project.settings")

def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--url", help="benchmark this server instead of a private embedded Valkey")
    ap.add_argument("--private", action="store_true",
                    help="the --url server is yours alone: take the INFO figures (commands, memory) there too")
    ap.add_argument("--quick", action="store_true", help="small counts: a smoke run of every phase")
    ap.add_argument("--only", help="comma-separated phases, e.g. drain,latency")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results.json"))
    opts = ap.parse_args()

    import django

    django.setup()
    from bench import phases
    from bench.harness import Ctx
    from bench.table import table

    folder = None
    if opts.url:
        url = opts.url
    else:
        from emq.core import embedded

        folder = Path(tempfile.mkdtemp(prefix="emq-bench-valkey-"))
        url = embedded.start(folder, persist=False)
    try:
        ctx = Ctx(url=url, private=folder is not None or opts.private, server="", quick=opts.quick)
        _configure(ctx, embedded=folder is not None)
        wanted = set(opts.only.split(",")) if opts.only else None
        started = time.monotonic()
        for phase in phases.PHASES:
            if wanted is None or phase.__name__ in wanted:
                sys.stderr.write(f"{phase.__name__}: {phase.__doc__.splitlines()[0]}\n")
                phase(ctx)
        ctx.results["meta"] = _meta(ctx, time.monotonic() - started)
        Path(opts.out).write_text(json.dumps(ctx.results, indent=2, default=str) + "\n")
        print(table(ctx))
        sys.stderr.write(f"figures written to {opts.out}\n")
    finally:
        _cleanup(folder)
    return 0


def _configure(ctx, embedded: bool) -> None:
    from django.conf import settings

    from emq.core import connection

    settings.EMQ_URL, settings.EMQ_PREFIX = ctx.url, ctx.prefix
    connection.reset()
    info = ctx.client.info("server")
    name = "Valkey" if "valkey_version" in info else "Redis"
    version = info.get("valkey_version") or info.get("redis_version")
    where = "private embedded" if embedded else ctx.url + (", private" if ctx.private else "")
    ctx.server = f"{name} {version} ({where})"


def _cleanup(folder: Path | None) -> None:
    from emq.core import embedded

    if folder is not None:
        embedded.stop(folder)
        shutil.rmtree(folder, ignore_errors=True)
        return
    from django.conf import settings

    from emq.core.connection import get_client
    from emq.testing import delete_prefix

    delete_prefix(get_client(), settings.EMQ_PREFIX)


def _meta(ctx, seconds: float) -> dict:
    return {"server": ctx.server, "quick": ctx.quick, "seconds": round(seconds, 1), "python": platform.python_version(),
            "load_average": os.getloadavg(), "cpus": os.cpu_count(), "when": time.strftime("%Y-%m-%d %H:%M:%S UTC",
                                                                                            time.gmtime())}


if __name__ == "__main__":
    sys.exit(main())
