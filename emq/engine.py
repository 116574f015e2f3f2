"""Thin Python over the Lua scripts: one method per atomic operation of a queue.

Each method is the only place that knows its script's KEYS/ARGV order (see the headers in
``emq/lua/``) and turns the reply into named values. Every call is one round trip.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from . import conf, scripts
from .connection import get_client, guard
from .errors import JobNotFound
from .keys import QueueKeys
from .records import Claimed, Job, Outcome

MAX_BATCH = 1000  # items per script call: bounds Lua's stack and the server's time per call
MINT_PIPELINE = 10  # mint chunks sent in one pipeline: bounds the client's buffer (~2 MB)


@dataclass(frozen=True)
class MintSpec:
    """One job to mint, fully resolved (ids, JSON and options already checked)."""

    id: str
    name: str
    args_json: str
    kwargs_json: str
    group: str
    due: str  # "" now | "+<ms>" | "@<epoch ms>"
    max_attempts: int
    lease_ms: int
    max_stalled: int
    backoff: tuple[float, float]
    if_absent: bool = False
    origin: str = ""
    priority: int = 0  # > 0: head of its lane when it becomes ready (see mint.lua)
    meta: str = ""  # JSON object kept on the job for the caller, e.g. the django.tasks backend

    def argv(self) -> list[Any]:
        return [
            self.id, "1" if self.if_absent else "0", self.name, self.args_json, self.kwargs_json,
            self.group, self.due, self.max_attempts, self.lease_ms, self.max_stalled,
            f"{self.backoff[0]},{self.backoff[1]}", self.origin, int(self.priority), self.meta,
        ]


def _json(text: str) -> Any:
    """Decode a job's arguments; no arguments (the common case) skip the decoder."""
    if text == "[]":
        return []
    if text == "{}":
        return {}
    return json.loads(text)


@functools.lru_cache(maxsize=256)
def _backoff(text: str) -> tuple[float, float]:
    """Parse "<base>,<cap>" once per distinct value: every job of a function shares one."""
    base, cap = text.split(",")
    return float(base), float(cap)


def _mint_argv(chunk: Sequence[MintSpec]) -> list[Any]:
    argv: list[Any] = [len(chunk)]
    for spec in chunk:
        argv.extend(spec.argv())
    return argv


@dataclass(frozen=True)
class Counts:
    """A queue's jobs per state, read in one script on the server clock."""

    now_ms: int
    scheduled: int
    ready: int
    active: int
    completed: int
    dead: int
    next_due_ms: int | None
    groups_on_ring: int


@dataclass(frozen=True)
class Tick:
    """What one Pump step did and how long the Pump may park."""

    leader: bool
    promoted: int
    reclaimed: int
    park_ms: int
    repeat_due: bool
    now_ms: int


class Queue:
    """One queue on the configured server; cheap to build, safe to share between threads."""

    def __init__(self, name: str, *, prefix: str | None = None, client: Any = None) -> None:
        self.name = name
        self.keys = QueueKeys(prefix or conf.get("EMQ_PREFIX"), name)
        self._client = client

    def __repr__(self) -> str:
        return f"<Queue {self.name!r} prefix={self.keys.prefix!r}>"

    @property
    def client(self) -> Any:
        return self._client or get_client()

    def _run(self, name: str, args: Sequence[Any]) -> Any:
        with guard():
            return scripts.run(self.client, name, [self.keys.ns], args)

    def mint(self, specs: Sequence[MintSpec]) -> list[bool]:
        """Create jobs, each chunk of MAX_BATCH atomic; True where a job was new.

        Up to MINT_PIPELINE chunks go in one pipelined round trip, so the server runs one chunk
        while the next is still on the wire (bulk enqueue is bound by the server's time per job).
        """
        created: list[bool] = []
        step = MAX_BATCH * MINT_PIPELINE
        for start in range(0, len(specs), step):
            calls = [("mint", [self.keys.ns], _mint_argv(specs[i : i + MAX_BATCH]))
                     for i in range(start, min(start + step, len(specs)), MAX_BATCH)]
            with guard():
                replies = scripts.run_many(self.client, calls)
            for reply in replies:
                created.extend(bool(x) for x in reply[1:])
        return created

    def bclaim(self, n: int, worker_id: str) -> list[Claimed]:
        """Lease up to n ready jobs, fairly across groups; each comes with its fencing token."""
        return self._claimed(self._run("bclaim", [min(n, MAX_BATCH), worker_id]))

    @staticmethod
    def _claimed(reply: list) -> list[Claimed]:
        jobs = []
        for i in range(1, len(reply), 8):
            jid, token, name, args, kwargs, lease, max_attempts, backoff = reply[i : i + 8]
            jobs.append(
                Claimed(
                    jid, int(token), name, _json(args), _json(kwargs),
                    int(lease), int(max_attempts), _backoff(backoff),
                )
            )
        return jobs

    def finish_argv(self, outcomes: Sequence[Outcome]) -> list[Any]:
        ttl_ms = int(conf.get("EMQ_RESULT_TTL") * 1000)
        argv: list[Any] = [len(outcomes), ttl_ms, conf.get("EMQ_KEEP_COMPLETED")]
        for o in outcomes:
            argv.extend((o.id, o.token, o.outcome, o.value, o.retry_ms))
        return argv

    def finish(self, outcomes: Sequence[Outcome]) -> list[str]:
        """Settle a batch, each item on its own: "ok", "stale" or "missing" per item."""
        statuses: list[str] = []
        for start in range(0, len(outcomes), MAX_BATCH):
            statuses.extend(self._run("finish", self.finish_argv(outcomes[start : start + MAX_BATCH])))
        return statuses

    def finish_and_claim(
        self, outcomes: Sequence[Outcome], n: int, worker_id: str
    ) -> tuple[list[str], list[Claimed]]:
        """Finish a batch and claim the next in one pipelined round trip (the worker's hot path)."""
        calls = []
        if outcomes:
            calls.append(("finish", [self.keys.ns], self.finish_argv(outcomes[:MAX_BATCH])))
        if n > 0:
            calls.append(("bclaim", [self.keys.ns], [min(n, MAX_BATCH), worker_id]))
        with guard():
            replies = scripts.run_many(self.client, calls)
        statuses = replies[0] if outcomes else []
        claimed = self._claimed(replies[-1]) if n > 0 else []
        if len(outcomes) > MAX_BATCH:
            statuses = statuses + self.finish(outcomes[MAX_BATCH:])
        return statuses, claimed

    def extend_lock(self, job_id: str, token: int, ms: int) -> bool:
        """Renew one lease; only the holder of the current token of an active job succeeds."""
        return self.extend_locks([(job_id, token)], ms)[0] == "ok"

    def extend_locks(self, items: Iterable[tuple[str, int]], ms: int) -> list[str]:
        """Renew many leases in one round trip: "ok", "stale" or "missing" per item."""
        argv: list[Any] = [int(ms)]
        for job_id, token in items:
            argv.extend((job_id, token))
        return self._run("extend", argv) if len(argv) > 1 else []

    def release_lock(self, job_id: str, token: int, delay: float | None = None) -> bool:
        """Give a job back (ready now, or scheduled after delay seconds); the attempt stays counted."""
        return self.release_locks([(job_id, token)], delay)[0] == "ok"

    def release_locks(self, items: Iterable[tuple[str, int]], delay: float | None = None) -> list[str]:
        """Give many jobs back in one round trip: "ok", "stale" or "missing" per item."""
        delay_ms = int((delay or 0) * 1000)
        argv: list[Any] = []
        for job_id, token in items:
            argv.extend((job_id, token, delay_ms))
        return self._run("release", argv) if argv else []

    def sweep(self, limit: int = MAX_BATCH) -> list[str]:
        """Reclaim every lease expired on the server clock; returns the reclaimed ids."""
        swept: list[str] = []
        while True:
            ids = self._run("sweep", [limit])
            swept.extend(ids)
            if len(ids) < limit:
                return swept

    def tick(self, pump_id: str, ttl_ms: int, park_ms: int, limit: int = MAX_BATCH) -> Tick:
        """One Pump step (lead, promote, reclaim) and how long to park after it."""
        r = self._run("tick", [pump_id, ttl_ms, limit, park_ms])
        return Tick(bool(r[0]), int(r[1]), int(r[2]), int(r[3]), bool(r[4]), int(r[5]))

    def counts(self) -> Counts:
        """Jobs per state and the next due time, on the server clock."""
        r = [int(x) for x in self._run("counts", [])]
        return Counts(r[0], r[1], r[2], r[3], r[4], r[5], None if r[6] < 0 else r[6], r[7])

    def set_group_limit(self, group: str, limit: int | None) -> None:
        """Cap how many jobs of one group may be active at once (None lifts the cap)."""
        if limit is not None and int(limit) < 1:
            raise ValueError(f"group limit for {group!r} must be >= 1 or None, not {limit!r}")
        self._run("set_cap", [group, "" if limit is None else int(limit)])

    def get_job(self, job_id: str) -> Job:
        """Read one job; JobNotFound when it does not exist (or was trimmed)."""
        with guard():
            h = self.client.hgetall(self.keys.job(job_id))
        if not h:
            raise JobNotFound(f"no job {job_id!r} in queue {self.name!r} (prefix {self.keys.prefix!r})")
        return Job.from_hash(self.name, job_id, h)
