"""What every benchmark phase needs: the server, worker processes, progress bars, counters."""

from __future__ import annotations

import collections
import os
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from emq.core import stored

ROOT = Path(__file__).resolve().parent.parent


@dataclass
class Ctx:
    """One benchmark run: the server, its key prefix, and where figures go."""

    url: str
    private: bool  # our own server: INFO commandstats and memory are ours alone
    server: str  # "Valkey 9.1.2 (embedded)" etc.
    quick: bool
    prefix: str = field(default_factory=lambda: f"emqbench-{uuid.uuid4().hex[:8]}")
    results: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def client(self):
        from emq.core.connection import get_client

        return get_client()

    def n(self, full: int, quick: int) -> int:
        return quick if self.quick else full

    def keys(self, queue: str):
        from emq.core import topology

        return topology.keys_of(self.prefix, queue)


class Progress:
    """A one-line progress bar on stderr for one long phase."""

    def __init__(self, label: str, total: int) -> None:
        self.label, self.total, self.last = label, max(total, 1), 0.0
        self.update(0)

    def update(self, done: int) -> None:
        now = time.monotonic()
        if now - self.last < 0.1 and done < self.total:
            return
        self.last = now
        filled = int(30 * min(done, self.total) / self.total)
        sys.stderr.write(f"\r  {self.label:<34} [{'#' * filled}{'.' * (30 - filled)}] {done:>9,}/{self.total:,}")
        sys.stderr.flush()

    def close(self, note: str = "") -> None:
        self.update(self.total)
        sys.stderr.write(f"  {note}\n")
        sys.stderr.flush()


class WorkerProc:
    """``manage.py emq_worker`` as a child process; its stderr is read so it never blocks."""

    def __init__(self, ctx: Ctx, queue: str, *args: str, env: dict[str, str] | None = None) -> None:
        env = {
            **os.environ, "EMQ_URL": ctx.url, "EMQ_PREFIX": ctx.prefix, "EMQ_IMPORTS": "bench.jobs",
            "PYTHONUNBUFFERED": "1", "EMQ_LOG_LEVEL": os.environ.get("EMQ_LOG_LEVEL", "INFO"),
            "SECRET_KEY": os.environ.get("SECRET_KEY", "bench-only-key-not-a-secret"), **(env or {}),
        }
        self.spawned = time.time()
        self.up: float | None = None
        self.cpu_up = 0.0  # CPU seconds of the worker's processes when its "up" line came
        self.cpu_done = 0.0  # ...when wait_completed saw the last job completed (see there)
        self.lines: collections.deque[str] = collections.deque(maxlen=50)
        self.proc = subprocess.Popen(
            [sys.executable, "manage.py", "emq_worker", "--queues", queue, *args],
            cwd=ROOT, env=env, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
        )
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stderr:
            if self.up is None and " up: " in line and "emq.worker" in line:
                self.up = time.time()
                self.cpu_up = tree_cpu(self.proc.pid)
            self.lines.append(line.rstrip())

    def wait_up(self, timeout: float = 30.0) -> float:
        deadline = time.monotonic() + timeout
        while self.up is None:
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("worker did not start:\n" + "\n".join(self.lines))
            time.sleep(0.002)
        return self.up

    def exited(self) -> int | None:
        """Its exit code once it exited, else None. It is not reaped here: a burst worker that exits
        right after its last job keeps its CPU figures readable in /proc until ``stop`` reaps it."""
        if self.proc.returncode is not None:
            return self.proc.returncode
        try:
            info = os.waitid(os.P_PID, self.proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            return self.proc.poll()
        if info is None:
            return None
        return info.si_status if info.si_code == os.CLD_EXITED else -info.si_status

    def stop(self, timeout: float = 30.0, burst: bool = False) -> int:
        """SIGTERM and wait; a burst worker is first given the chance to exit by itself."""
        if burst:
            try:
                return self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                pass
        if self.proc.poll() is None:
            self.proc.terminate()
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait()


def completed(ctx: Ctx, queue: str) -> int:
    return int(ctx.client.hget(ctx.keys(queue).stats, "completed") or 0)


def wait_completed(ctx: Ctx, queue: str, total: int, label: str, proc: WorkerProc | None = None,
                   timeout: float = 600.0) -> None:
    """Poll the queue's completed counter with a progress bar until it reaches total."""
    bar = Progress(label, total)
    deadline = time.monotonic() + timeout
    cpu = 0.0
    while (done := completed(ctx, queue)) < total:
        if proc is not None:
            cpu = tree_cpu(proc.proc.pid) or cpu
        bar.update(done)
        if proc is not None and (code := proc.exited()) not in (None, 0):
            raise RuntimeError(f"worker exited {code}:\n" + "\n".join(proc.lines))
        if time.monotonic() > deadline:
            raise RuntimeError(f"{label}: only {done}/{total} completed after {timeout}s")
        time.sleep(0.02)
    if proc is not None:
        # Read now, unless it exited meanwhile (a burst worker): then its CPU would count its shutdown
        # too, so the last reading before the end stands (one 20 ms poll short of it at most).
        proc.cpu_done = tree_cpu(proc.proc.pid) if proc.exited() is None else cpu
    bar.close()


def done_scores(ctx: Ctx, queue: str) -> list[float]:
    """Finish times (server ms) of the queue's completed jobs, in order."""
    return [s for _, s in ctx.client.zrange(ctx.keys(queue).done, 0, -1, withscores=True)]


def results(ctx: Ctx, queue: str, ids: list[str]) -> list[Any]:
    """The JSON results of some jobs, read in pipelined chunks."""
    import json

    out: list[Any] = []
    for i in range(0, len(ids), 2000):
        rows = stored.read_raw(ctx.client, [ctx.keys(queue).job(jid) for jid in ids[i : i + 2000]], ("result",))
        out.extend(json.loads(r) if r is not None else None for (r,) in rows)
    return out


def commandstats(ctx: Ctx) -> dict[str, int]:
    """Calls per command since the last CONFIG RESETSTAT (commands run inside scripts included)."""
    return {k.removeprefix("cmdstat_"): int(v["calls"]) for k, v in ctx.client.info("commandstats").items()}


def command_usec(ctx: Ctx) -> int:
    """Server microseconds in commands other than script calls since the last reset: inside scripts too, so
    that a script's time less this is its own Lua (argument handling, tables, the interpreter)."""
    stats = ctx.client.info("commandstats")
    scripts = {f"cmdstat_{c}" for c in ("evalsha", "eval", "fcall", "config|resetstat", "info")}
    return sum(int(v.get("usec", 0)) for k, v in stats.items() if k not in scripts)


def script_usec(ctx: Ctx) -> int:
    """Server microseconds spent in scripts (commands they call included) since the last reset."""
    stats = ctx.client.info("commandstats")
    return sum(int(stats.get(f"cmdstat_{c}", {}).get("usec", 0)) for c in ("evalsha", "eval", "fcall"))


def server_cpu(ctx: Ctx) -> float:
    """CPU seconds the server process has used (user + system, every thread), from INFO cpu."""
    info = ctx.client.info("cpu")
    return float(info["used_cpu_user"]) + float(info["used_cpu_sys"])


def cpu_seconds(pid: int, reaped: bool = False) -> float:
    """User + system CPU seconds of one process (10 ms ticks); with reaped, its waited-for children's too."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = int(fields[11]) + int(fields[12]) + (int(fields[13]) + int(fields[14]) if reaped else 0)
    return ticks / os.sysconf("SC_CLK_TCK")


def tree_cpu(pid: int) -> float:
    """CPU seconds of a process and all its descendants, live or reaped (``--processes N`` workers).

    A child the supervisor reaps between two reads moves from the live list into its parent's
    reaped total, so the sum holds across it (to a tick).
    """
    try:
        total = cpu_seconds(pid, reaped=True)
    except (FileNotFoundError, ProcessLookupError):
        return 0.0
    try:  # an exited process not yet reaped (see WorkerProc.exited) has its figures, but no tasks
        children = [int(c) for task in Path(f"/proc/{pid}/task").iterdir()
                    for c in (task / "children").read_text().split()]
    except (FileNotFoundError, ProcessLookupError):
        children = []
    return total + sum(tree_cpu(c) for c in children)


def _sched(pid: int) -> tuple[float, float]:
    """(CPU, waiting for a core) in ms, summed over a process's live threads (/proc/<pid>/task/*/schedstat)."""
    cpu = wait = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            ran, waited = (task / "schedstat").read_text().split()[:2]
        except (FileNotFoundError, ProcessLookupError):
            continue  # a thread that ended meanwhile
        cpu, wait = cpu + int(ran), wait + int(waited)
    return cpu / 1e6, wait / 1e6


class HostWaits:
    """How long each process of a run was ready to run but found no free core (the host's share of a stall).

    A p99 made of 5-30 ms stalls while the worker, the server or this process (the producer) waited
    that long in the run queue is the machine's load, not emq's: the figure is kept beside the run's
    percentiles so a reader can tell the two apart (issue #19). The server counts only when it is a
    private server on this host; each is skipped where /proc cannot read it.
    """

    def __init__(self, ctx: Ctx, worker: WorkerProc) -> None:
        self.pids = {"worker": worker.proc.pid, "bench": os.getpid()}
        if ctx.private and urlsplit(ctx.url).hostname in ("127.0.0.1", "localhost", "::1"):
            self.pids["server"] = int(ctx.client.info("server")["process_id"])
        self.start = {who: self._read(pid) for who, pid in self.pids.items()}

    @staticmethod
    def _read(pid: int) -> tuple[float, float] | None:
        try:
            return _sched(pid)
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            return None

    def done(self) -> dict[str, dict[str, float]]:
        """Per process: CPU ms and run-queue wait ms since the start."""
        out = {}
        for who, pid in self.pids.items():
            end, start = self._read(pid), self.start[who]
            if end is not None and start is not None:
                out[who] = {"cpu_ms": round(end[0] - start[0], 1), "runq_wait_ms": round(end[1] - start[1], 1)}
        return out


def reset_stats(ctx: Ctx) -> None:
    ctx.client.config_resetstat()


def pct(values: list[float], p: float) -> float:
    """The p-th percentile (0..100), nearest rank."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(p / 100 * len(ordered) + 0.5) - 1))]


class RoundTrips:
    """Count requests this process sends (a pipeline is one): the client's round trips."""

    def __init__(self) -> None:
        from redis.connection import AbstractConnection

        self.count = 0
        self._cls = AbstractConnection
        self._orig = AbstractConnection.send_packed_command
        counter = self

        def send(conn, command, check_health=True):
            counter.count += 1
            return counter._orig(conn, command, check_health)

        AbstractConnection.send_packed_command = send

    def close(self) -> None:
        self._cls.send_packed_command = self._orig
