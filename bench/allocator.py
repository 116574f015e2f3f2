"""The claims phase again on a jemalloc server, beside the embedded one (which is built with libc malloc).

The many-groups side of the claims phase allocates and frees more small objects a job than the
one-group side, so the server's allocator moves its ratio (bench/claims.py's docstring has the
figures). Release builds of Valkey and Redis use jemalloc; the embedded Valkey does not. When a
``valkey-server`` or ``redis-server`` is on PATH and runs jemalloc, ``make bench`` starts it as the
embedded one is started (same settings, a temp folder) and runs the phase there too, in a child
``bench/run.py --url ... --private --only claims``.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import redis

from emq.core import embedded

ROOT = Path(__file__).resolve().parent.parent


def claims_on_jemalloc() -> dict | None:
    """The claims figures on a private jemalloc server, or None when this host has none on PATH."""
    binary = shutil.which("valkey-server") or shutil.which("redis-server")
    if binary is None:
        return None
    folder = Path(tempfile.mkdtemp(prefix="emq-bench-jemalloc-"))
    try:
        url = embedded.start(folder, persist=False, server=binary)
        info = redis.Redis.from_url(url, decode_responses=True).info()
        if not str(info.get("mem_allocator", "")).startswith("jemalloc"):
            return None
        out = folder / "claims.json"
        subprocess.run([sys.executable, str(ROOT / "bench" / "run.py"), "--url", url, "--private", "--only", "claims",
                        "--out", str(out)], check=True, stdout=subprocess.DEVNULL, cwd=ROOT)
        figures = json.loads(out.read_text())["claims"]
        name = "Valkey" if "valkey_version" in info else "Redis"
        figures["server"] = f"{name} {info.get('valkey_version') or info['redis_version']}, {info['mem_allocator']}"
        return figures
    finally:
        embedded.stop(folder)
        shutil.rmtree(folder, ignore_errors=True)
