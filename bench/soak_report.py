"""The soak's verdict (``bench/soak.py``): every acknowledged job read back, every body's ends, every restart."""

from __future__ import annotations

import argparse
import re
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from bench.soak_fleet import Fleet

DIED = re.compile(r"worker process (\d+) died \(([^)]*)\)")
KILL_WINDOW = 1.0  # seconds from a body's end to its process's kill within which the kill took its finish
# Lines counted in the workers' logs: what a reader of the soak may want to look at.
NOTED = {"lost-lease warnings": "lost its lease", "stale finishes": "state=stale",
         "threads abandoned": "abandoned (", "drains for stuck threads": "EMQ_MAX_ABANDONED="}


@dataclass
class Report:
    acknowledged: Counter = field(default_factory=Counter)  # by kind
    ended: Counter = field(default_factory=Counter)  # by state
    pending: int = 0  # not ended and not due yet
    lost: list[str] = field(default_factory=list)
    stuck: list[str] = field(default_factory=list)
    twice: list[str] = field(default_factory=list)  # "<id>: attempt@pid, ...", no kill explains them
    twice_killed: list[str] = field(default_factory=list)  # the first run's finish died with its process
    kills: int = 0
    after_kills: int = 0  # worker restarts caused by the kills
    other: list[str] = field(default_factory=list)  # the other worker restarts, as the logs say them
    noted: dict[str, int] = field(default_factory=dict)

    @property
    def met(self) -> bool:
        return not (self.lost or self.stuck or self.twice) and len(self.other) < 5

    def text(self, opts: argparse.Namespace) -> str:
        kinds = ", ".join(f"{k} {n:,}" for k, n in self.acknowledged.most_common())
        states = ", ".join(f"{k} {n:,}" for k, n in self.ended.most_common())
        rows = [
            f"soak: {opts.minutes:g} min at {opts.rate:g} jobs/s; 3 workers (2 supervised, 1 --no-supervise); "
            f"kill -9 every {opts.kill_every:g} s",
            f"acknowledged            {sum(self.acknowledged.values()):>9,}   {kinds}",
            f"ended                   {sum(self.ended.values()):>9,}   {states}",
            f"not due yet             {self.pending:>9,}",
            f"lost                    {len(self.lost):>9,}   target 0   {' '.join(self.lost[:5])}",
            f"stuck                   {len(self.stuck):>9,}   target 0   {' '.join(self.stuck[:5])}",
            f"run to the end twice    {len(self.twice) + len(self.twice_killed):>9,}   "
            f"{len(self.twice_killed)} after a kill -9 took the first run's finish (at least once), "
            f"{len(self.twice)} not (target 0){': ' if self.twice else ''}{'; '.join(self.twice[:5])}",
            f"kills (kill -9)         {self.kills:>9,}",
            f"worker restarts         {self.after_kills + len(self.other):>9,}   {self.after_kills} after a kill, "
            f"{len(self.other)} not (target < 5){': ' if self.other else ''}{'; '.join(self.other[:5])}",
            "in the workers' logs:   " + ", ".join(f"{k} {n:,}" for k, n in self.noted.items()),
            f"verdict: {'targets met' if self.met else 'TARGETS MISSED'}",
        ]
        return "\n".join(rows)


def verdict(fleet: Fleet, acks: Path) -> Report:
    """Read back every acknowledged job and the bodies' ends; count the restarts the kills do not explain."""
    report = Report(kills=len(fleet.killed))
    kinds: dict[str, str] = {}
    for line in acks.read_text().splitlines():
        kind, job_id = line.split()
        kinds.setdefault(job_id, kind)  # a unique call that minted nothing names its first job again
    report.acknowledged = Counter(kinds.values())
    _states(report, kinds, fleet.queue)
    _ends(report, fleet)
    _restarts(report, fleet)
    text = "".join(log.read_text(errors="replace") for log in fleet.logs())
    report.noted = {name: text.count(needle) for name, needle in NOTED.items()}
    return report


def _states(report: Report, kinds: dict[str, str], queue: str) -> None:
    import emq
    from emq.errors import JobNotFound

    now = time.time()
    for job_id in kinds:
        try:
            job = emq.get_job(job_id, queue)
        except JobNotFound:
            report.lost.append(job_id)
            continue
        if job.settled:
            report.ended[job.state] += 1
        elif job.state == "scheduled" and job.due is not None and job.due.timestamp() > now:
            report.pending += 1
        else:
            report.stuck.append(f"{job_id}({job.state})")


def _ends(report: Report, fleet: Fleet) -> None:
    """The jobs whose body reached its end in more than one attempt (soak_jobs: ``<id> <attempt> <pid> <ms>``)."""
    from bench.soak_jobs import ends_key
    from emq.core.connection import get_client

    client, key, seen = get_client(), ends_key(), {}
    for start in range(0, client.llen(key), 10_000):
        for entry in client.lrange(key, start, start + 9_999):
            job_id, attempt, pid, ms = entry.split()
            seen.setdefault(job_id, []).append((int(attempt), int(pid), int(ms) / 1000))
    for job_id, runs in seen.items():
        if len(runs) > 1:
            said = f"{job_id}: {', '.join(f'{a}@{p}' for a, p, _ in sorted(runs))}"
            (report.twice_killed if _killed_before_its_finish(job_id, min(runs), fleet) else report.twice
             ).append(said)


def _killed_before_its_finish(job_id: str, first: tuple[int, int, float], fleet: Fleet) -> bool:
    """Whether the first run's process was killed within KILL_WINDOW of its end, and the server then reclaimed
    the job from that process (so it never recorded that run's finish)."""
    import emq

    _, pid, ended = first
    killed = fleet.killed.get(pid)
    if killed is None or not 0 <= killed - ended <= KILL_WINDOW:
        return False
    errors = emq.get_job(job_id, fleet.queue).errors
    return any(e.get("error", "").startswith("stalled: lease expired") and f":{pid}:" in e["error"] for e in errors)


def _restarts(report: Report, fleet: Fleet) -> None:
    """Each worker process that ended while the soak ran: by a kill of ours, or for a reason of its own."""
    for log in fleet.logs():
        if log.name == "worker-c.log":
            continue  # the --no-supervise worker: its exits are in fleet.bare_exits
        for pid, how in DIED.findall(log.read_text(errors="replace")):
            if int(pid) in fleet.killed and how == "signal 9":
                report.after_kills += 1
            else:
                report.other.append(f"{log.stem} {pid}: {how}")
    for pid, code in fleet.bare_exits:
        if pid in fleet.killed and code == -9:
            report.after_kills += 1
        else:
            report.other.append(f"worker-c {pid}: exit code {code}")
