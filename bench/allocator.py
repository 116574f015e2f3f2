"""The claims phase again on a jemalloc server, beside the embedded one (which is built with libc malloc).

The many-groups side of the claims phase allocates and frees more small objects a job than the
one-group side, so the server's allocator moves its ratio (bench/claims.py's docstring has the
figures). Release builds of Valkey and Redis use jemalloc; the embedded Valkey does not. When a
``valkey-server`` or ``redis-server`` is on PATH and runs jemalloc, ``make bench`` runs the phase
on a private one too (a child ``bench/run.py --url ... --private --only claims``) and shows both.
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import redis

ROOT = Path(__file__).resolve().parent.parent


def claims_on_jemalloc() -> dict | None:
    """The claims figures on a private jemalloc server, or None when this host has none on PATH."""
    binary = shutil.which("valkey-server") or shutil.which("redis-server")
    if binary is None:
        return None
    port = _free_port()
    with tempfile.TemporaryDirectory(prefix="emq-bench-jemalloc-") as folder:
        server = subprocess.Popen([binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                                   "--appendonly", "no", "--dir", folder], stdout=subprocess.DEVNULL)
        try:
            client = _wait_up(port)
            info = client.info()
            if not str(info.get("mem_allocator", "")).startswith("jemalloc"):
                return None
            out = Path(folder) / "claims.json"
            subprocess.run([sys.executable, str(ROOT / "bench" / "run.py"), "--url", f"redis://127.0.0.1:{port}/0",
                            "--private", "--only", "claims", "--out", str(out)], check=True,
                           stdout=subprocess.DEVNULL, cwd=ROOT)
            figures = json.loads(out.read_text())["claims"]
            name = "Valkey" if "valkey_version" in info else "Redis"
            figures["server"] = f"{name} {info.get('valkey_version') or info['redis_version']}, {info['mem_allocator']}"
            return figures
        finally:
            server.terminate()
            server.wait(30)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_up(port: int, deadline_s: float = 10.0) -> redis.Redis:
    client = redis.Redis(port=port, decode_responses=True)
    end = time.monotonic() + deadline_s
    while True:
        try:
            client.ping()
            return client
        except redis.ConnectionError:
            if time.monotonic() > end:
                raise
            time.sleep(0.05)
