"""The soak's workers (``bench/soak.py``): started, killed in turn, kept up, drained and stopped.

Two plain ``emq_worker`` commands supervise their worker process themselves; the third runs with
``--no-supervise`` and is restarted here when it exits, as systemd's ``Restart=always`` would.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CONCURRENCY = "8"


class Fleet:
    """The workers of one soak, their logs in folder, and what was done to them."""

    def __init__(self, env: dict[str, str], folder: Path, queue: str) -> None:
        self.env, self.folder, self.queue = env, folder, queue
        self.supervised = [self._start("a"), self._start("b")]
        self.bare = self._start("c", "--no-supervise")
        self.killed: dict[int, float] = {}  # pids this soak killed with SIGKILL -> when (epoch seconds)
        self.bare_exits: list[tuple[int, int]] = []  # (pid, exit code) of each end of the --no-supervise worker
        self.turn = 0

    def logs(self) -> list[Path]:
        return sorted(self.folder.glob("worker-*.log"))

    def run(self, producer: subprocess.Popen, kill_every: float, acks: Path) -> None:
        """Until the producer ends: kill a worker process every kill_every seconds, keep the bare one up."""
        started = time.monotonic()
        next_kill, next_say = started + kill_every, started + 10
        while producer.poll() is None:
            self._keep_bare()
            now = time.monotonic()
            if now >= next_kill:
                self._kill_next()
                next_kill += kill_every
            if now >= next_say:
                next_say += 10
                self._say(now - started, acks)
            time.sleep(0.1)
        if producer.returncode:
            raise RuntimeError(f"the producer failed with exit code {producer.returncode}")

    def drain(self, limit: float) -> None:
        """Wait until nothing is ready, active or scheduled, for at most limit seconds."""
        import emq

        q = emq.queue(self.queue)
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline:
            self._keep_bare()
            c = q.counts()
            if c.ready + c.active + c.scheduled + c.waiting == 0:
                return
            time.sleep(0.5)
        sys.stderr.write(f"  drain: still not idle after {limit:g} s\n")

    def stop(self) -> None:
        """SIGTERM to every worker command; kill one that is still there a minute later."""
        procs = [*self.supervised, self.bare]
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in procs:
            try:
                p.wait(timeout=60)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
            p.log.close()

    def _start(self, name: str, *args: str) -> subprocess.Popen:
        log = (self.folder / f"worker-{name}.log").open("a")
        argv = [sys.executable, "manage.py", "emq_worker", "--queues", self.queue, "--concurrency", CONCURRENCY, *args]
        proc = subprocess.Popen(argv, cwd=ROOT, env=self.env, stdout=log, stderr=subprocess.STDOUT)
        proc.log = log
        return proc

    def _keep_bare(self) -> None:
        """Restart the --no-supervise worker once it exited (its process manager's part)."""
        if self.bare.poll() is not None:
            self.bare_exits.append((self.bare.pid, self.bare.returncode))
            self.bare.log.close()
            self.bare = self._start("c", "--no-supervise")

    def _kill_next(self) -> None:
        """SIGKILL the next worker process in turn: a supervised command's child, or the bare worker."""
        for _ in range(3):
            proc = [self.supervised[0], self.bare, self.supervised[1]][self.turn % 3]
            self.turn += 1
            pid = proc.pid if proc is self.bare else _child(proc.pid)
            if pid is not None:
                self.killed[pid] = time.time()
                os.kill(pid, signal.SIGKILL)
                return

    def _say(self, elapsed: float, acks: Path) -> None:
        import emq

        c = emq.queue(self.queue).counts()
        sys.stderr.write(f"  {elapsed:5.0f} s: {_lines(acks):,} acknowledged; ready {c.ready}, active {c.active}, "
                         f"scheduled {c.scheduled}, completed {c.completed:,}, dead {c.dead:,}; "
                         f"{len(self.killed)} killed\n")


def _child(pid: int) -> int | None:
    """The worker process a supervising command forked (None while it restarts one)."""
    try:
        children = [int(c) for task in Path(f"/proc/{pid}/task").iterdir()
                    for c in (task / "children").read_text().split()]
    except (FileNotFoundError, ProcessLookupError):
        return None
    return children[0] if children else None


def _lines(path: Path) -> int:
    try:
        with path.open() as f:
            return sum(1 for _ in f)
    except FileNotFoundError:
        return 0
