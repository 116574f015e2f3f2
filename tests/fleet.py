"""A fixture that runs real ``emq_worker`` / ``emq_pump`` processes and always reaps them."""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

from emq.core.connection import get_client
from emq.core.keys import registry_workers
from tests.procs import manage, wait_for


class Fleet:
    """The processes one test started, with their logs in the test's folder."""

    def __init__(self, env: dict, folder: Path) -> None:
        self.env = env
        self.folder = folder
        self.procs: list[subprocess.Popen] = []

    def start(self, *args: str, env: dict | None = None) -> subprocess.Popen:
        """Start ``manage.py <args>``; its stderr goes to a log file named after its index."""
        log = open(self.folder / f"proc-{len(self.procs)}.log", "w")  # closed at reap
        proc = manage({**self.env, **(env or {})}, *args, stdout=log, stderr=subprocess.STDOUT)
        proc.log_path = log.name
        proc.log_file = log
        self.procs.append(proc)
        return proc

    def worker(self, *args: str, env: dict | None = None) -> subprocess.Popen:
        return self.start("emq_worker", *args, env=env)

    def pump(self, env: dict | None = None) -> subprocess.Popen:
        return self.start("emq_pump", env=env)

    def wait_workers(self, n: int, timeout: float = 30.0) -> None:
        """Wait until n workers have sent their first heartbeat (they are claiming or parked)."""
        key = registry_workers(self.env["EMQ_PREFIX"])
        wait_for(lambda: get_client().scard(key) >= n, timeout=timeout, what=f"{n} worker(s) up")

    @staticmethod
    def log(proc: subprocess.Popen) -> str:
        proc.log_file.flush()
        return Path(proc.log_path).read_text()

    def reap(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                os.kill(proc.pid, signal.SIGCONT)
                proc.kill()
            proc.wait(timeout=10)
            proc.log_file.close()


def fleet_for(env: dict, folder: Path) -> Iterator[Fleet]:
    """Body of a test module's ``fleet`` fixture: a Fleet that is reaped after the test."""
    f = Fleet(env, folder)
    try:
        yield f
    finally:
        f.reap()
