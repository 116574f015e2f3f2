"""A Valkey server of one test's own (the embedded binary), for faults that would disturb the shared
one: kill -9 and restart on the same port with its AOF, ``maxmemory`` changes."""

from __future__ import annotations

import socket
import subprocess
from pathlib import Path

import redis

from emq.core import embedded
from tests.procs import wait_for


class PrivateValkey:
    """One valkey-server process in folder, on a fixed port; AOF fsynced on every write."""

    def __init__(self, folder: Path, *extra: str) -> None:
        self.folder = folder
        self.extra = extra  # more server arguments, e.g. "--enable-debug-command", "yes" (DEBUG SLEEP)
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.proc: subprocess.Popen | None = None

    def start(self) -> PrivateValkey:
        args = [embedded.binary(), "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.folder),
                "--save", "", "--appendonly", "yes", "--appendfsync", "always",
                "--logfile", str(self.folder / "valkey.log"), *self.extra]
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_for(self._answers, timeout=15, what="the private Valkey to answer")
        return self

    def kill(self) -> None:
        """SIGKILL: no shutdown, no final save; what the AOF holds is what comes back."""
        assert self.proc is not None
        self.proc.kill()
        self.proc.wait(timeout=10)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.kill()

    def client(self) -> redis.Redis:
        return redis.Redis.from_url(self.url, decode_responses=True)

    def _answers(self) -> bool:
        try:
            return self.client().ping()
        except redis.RedisError:
            return False
