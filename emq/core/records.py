"""The values the engine hands out: what a claim returns and what ``get_job`` reads."""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from . import layout
from .frozen import _new, _set
from .lenient import loose, whole

STATES = ("waiting", "scheduled", "ready", "active", "completed", "dead", "cancelled")
SETTLED = ("completed", "dead", "cancelled")  # a job's end: what ref.wait() returns on
# What finish answers per item: the state the script decided, or why it changed nothing.
FINISHED = ("completed", "scheduled", "ready", "dead")
REFUSED = ("stale", "missing")


def from_ms(value: Any) -> datetime | None:
    """An aware UTC datetime from server milliseconds, or None when unset."""
    if value in (None, ""):
        return None
    return datetime.fromtimestamp(int(value) / 1000, tz=UTC)


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
    priority: int = 0  # -100..100: inside its group's lane, higher first, FIFO among equals (_prio.lua)
    meta: str = ""  # JSON object kept on the job for the caller, e.g. the django.tasks backend
    timeout_ms: int = 0  # an attempt's time limit (0: none); travels with the job to its worker
    soft_timeout_ms: int = 0  # when SoftTimeLimit is raised inside the job (0: never)
    unique: str = ""  # "" or mint.lua's uniqueness spec: "U<ms>|<s|f>|<key>" unique, "D<ms>|<key>" debounce

    def argv(self) -> list[Any]:
        """The 15 ARGV fields of one job, in mint.lua's order."""
        return self.argv_like(self.id, self.args_json, self.kwargs_json, self.group, self.due)

    def argv_like(self, job_id: str, args_json: str, kwargs_json: str, group: str, due: str) -> list[Any]:
        """``argv`` of a job that differs from this one in these fields only (an enqueue's plan fills them in)."""
        return [job_id, "1" if self.if_absent else (self.unique or "0"), self.name, args_json, kwargs_json, group,
                due, self.max_attempts, self.lease_ms, self.max_stalled, _pair(*self.backoff), self.origin,
                int(self.priority), self.meta, _pair(int(self.timeout_ms), int(self.soft_timeout_ms))]


@functools.lru_cache(maxsize=256)
def _pair(a: float, b: float) -> str:
    """"<a>,<b>" as a job stores its backoff and its time limits, formatted once per distinct value
    (every job of a function shares them); whole numbers without ".0": 4 bytes less a job."""
    return ",".join(str(int(x)) if float(x).is_integer() and abs(x) < 1e15 else repr(float(x)) for x in (a, b))


@dataclass(frozen=True)
class Claimed:
    """A job this worker holds under a lease; ``token`` fences every later call about it."""

    id: str
    token: int
    name: str
    args: list
    kwargs: dict
    lease_ms: int
    max_attempts: int
    backoff: tuple[float, float]
    group: str = ""
    due_ms: int = 0  # server ms it became due; claimed_ms - due_ms is its wait in the queue
    claimed_ms: int = 0  # server ms of the claim
    meta: str = ""  # "" or the JSON object minted with it (the trace context, the tasks backend's data)
    # Time limits in ms (0: none; None, built by hand: the worker applies EMQ_DEFAULT_TIMEOUT; core/layout.py).
    timeout_ms: int | None = None
    soft_timeout_ms: int = 0
    fault: str = ""  # what the worker could not decode (e.g. "args is not JSON"): it ends the job dead as corrupt

    @property
    def wait_ms(self) -> int:
        """How long the job waited between becoming due and this claim (server clock)."""
        return max(self.claimed_ms - self.due_ms, 0)

    @classmethod
    def from_reply(cls, reply: list) -> list[Claimed]:
        """The jobs of a bclaim reply: {now, then 7 fields per job, the last the fixed-form ones joined by "|"},
        decoded here (``frozen.built``'s work inline); fields alike jobs share, once a run of them (``of``)."""
        jobs: list[Claimed] = []
        if not reply:
            return jobs
        now, fields = int(reply[0]), iter(reply[1:])
        of: tuple = ("",) * 4  # the last lease, attempts, backoff, limits (raw), and the fields a run of jobs shares
        for f in zip(*[fields] * 7, strict=False):
            jid, token, name, args, kwargs, group, rest = f
            try:
                lease, tries, backoff, due, limits, meta = rest.split("|", 5)
                if lease != of[0] or tries != of[1] or backoff != of[2] or limits != of[3]:
                    # The job's own fields too, as placeholders: setting them in a copy grows nothing (-60 ns a job).
                    run = {"id": "", "token": 0, "name": "", "args": None, "kwargs": None, "lease_ms": int(lease),
                           "max_attempts": int(tries), "backoff": _backoff(backoff), "group": "", "due_ms": 0,
                           "claimed_ms": now, "meta": "", "timeout_ms": None, "soft_timeout_ms": 0, "fault": ""}
                    run["timeout_ms"], run["soft_timeout_ms"] = _limits(limits)
                    of = (lease, tries, backoff, limits, run)  # once every shared field decoded
                values = of[4].copy()  # a copy of every field, then the job's own set: a tenth cheaper than a display
                values["id"], values["token"], values["name"], values["meta"] = jid, int(token), name, meta
                values["args"] = [] if args == "[]" else _json(args, list)
                values["kwargs"] = {} if kwargs == "{}" else _json(kwargs, dict)
                values["group"], values["due_ms"] = group, int(due)
                job = _new(cls)
                _set(job, "__dict__", values)
            except Exception:  # one bad job never costs the batch: it is quarantined (records its fault)
                job = cls(jid, int(token), name or "", [], {}, 1000, 1, (1.0, 1.0), group or "", now, now,
                          fault=_fault(f))
            jobs.append(job)
        return jobs


def _json(text: str, kind: type) -> Any:
    """Decode a job's arguments (none, the common case, skip this: ``from_reply``)."""
    value = json.loads(text)
    if not isinstance(value, kind):
        raise TypeError(f"not a JSON {kind.__name__}")
    return value


# What each field of a bclaim reply must decode as, by its index once the joined one is split (_fault).
_FIELDS = ((3, "args", lambda v: _json(v, list)), (4, "kwargs", lambda v: _json(v, dict)), (6, "lease", int),
           (7, "max_attempts", int), (8, "backoff", lambda v: _backoff.__wrapped__(v)), (9, "due", int),
           (10, "timeout", lambda v: _limits.__wrapped__(v)))


def _fault(fields: tuple) -> str:
    """Which field of a claimed job did not decode, as the job's dead reason says it."""
    flat = [*fields[:6], *(fields[6] or "").split("|", 5)]
    for index, name, decode in _FIELDS:
        try:
            decode(flat[index])
        except json.JSONDecodeError:
            return f"{name} is not JSON"
        except Exception as exc:
            return f"{name} is not valid ({exc})"[:200]
    return "a field did not decode"


@functools.lru_cache(maxsize=256)
def _backoff(text: str) -> tuple[float, float]:
    """Parse "<base>,<cap>" once per distinct value: every job of a function shares one."""
    base, cap = text.split(",")
    return float(base), float(cap)


@functools.lru_cache(maxsize=256)
def _limits(text: str | None) -> tuple[int | None, int]:
    """Parse "<timeout ms>,<soft ms>" once per distinct value; None leaves it to the worker."""
    if not text:
        return None, 0
    hard, soft = text.split(",")
    return int(hard), int(soft)


@dataclass(frozen=True)
class Outcome:
    """How one attempt ended, as the finish script takes it."""

    id: str
    token: int
    # "completed" | "failed" (retried while attempts remain) | "dead" | "discarded" (dead, no retry) |
    # "corrupt" (dead as corrupt: value says which field did not decode)
    outcome: str
    value: str  # result JSON, or error text
    retry_ms: int = 0
    exc: BaseException | None = field(default=None, compare=False, repr=False)  # what the job raised, if any


@dataclass(frozen=True)
class Job:
    """Everything stored about one job, as ``emq.get_job`` returns it."""

    id: str
    queue: str
    name: str
    state: str
    args: list
    kwargs: dict
    group: str
    attempts: int
    max_attempts: int
    result: Any = None
    error: str | None = None
    errors: list = field(default_factory=list)
    created: datetime | None = None
    due: datetime | None = None
    started: datetime | None = None
    finished: datetime | None = None
    lease_until: datetime | None = None
    worker: str | None = None
    stalled: int = 0
    reason: str | None = None
    origin: str | None = None
    priority: int = 0
    meta: dict | None = None
    progress: float | None = None  # the last fraction ctx.progress() reported (written at most once a second)
    progress_note: str = ""
    flow: tuple[str, str] | None = None  # (queue, id) of the batch or chain the job belongs to

    @property
    def settled(self) -> bool:
        """True once the job has ended: completed, dead or cancelled."""
        return self.state in SETTLED

    @classmethod
    def from_hash(cls, queue: str, job_id: str, h: dict[str, str]) -> Job:
        """Build from the job's hash as stored by the scripts (fields left out at their defaults)."""
        h = layout.filled(h)
        return cls(
            id=job_id, queue=queue, name=h.get("fn", ""), state=h.get("state", ""),
            args=loose(h.get("args", "[]")), kwargs=loose(h.get("kwargs", "{}")), group=h.get("group", ""),
            attempts=whole(h.get("attempts")), max_attempts=whole(h.get("max_attempts")),
            result=loose(h["result"]) if "result" in h else None,
            error=h.get("error"),
            errors=loose(h.get("errors", "[]")),
            created=from_ms(h.get("created")),
            due=from_ms(h.get("due")),
            started=from_ms(h.get("claimed")),
            finished=from_ms(h.get("finished")),
            lease_until=from_ms(h.get("lease_until")),
            worker=h.get("worker"),
            stalled=whole(h.get("stalled")),
            reason=h.get("reason"),
            origin=h.get("origin"),
            priority=int(h.get("priority", 0)),
            meta=loose(h["meta"]) if "meta" in h else None,
            progress=float(h["progress"]) if "progress" in h else None,
            progress_note=h.get("progress_note", ""),
            flow=tuple(json.loads(h["flow"])) if "flow" in h else None,
        )


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
    cancelled: int = 0
    paused: bool = False  # the queue is paused (every partition of a partitioned one)
    waiting: int = 0  # jobs waiting for their parents (after=, chain steps, batch callbacks)
    relaying: int = 0  # parents' outcomes still to be forwarded to jobs of other queues (the Pump does)

    @classmethod
    def from_reply(cls, reply: list) -> Counts:
        r = [int(x) for x in reply]
        return cls(r[0], r[1], r[2], r[3], r[4], r[5], None if r[6] < 0 else r[6], r[7], r[8], bool(r[9]),
                   *r[10:12])

    @classmethod
    def summed(cls, parts: list[Counts]) -> Counts:
        """The counts of a partitioned queue: its partitions' added up, the earliest due time."""
        if len(parts) == 1:
            return parts[0]
        dues = [c.next_due_ms for c in parts if c.next_due_ms is not None]
        summed = ("scheduled", "ready", "active", "completed", "dead", "cancelled", "groups_on_ring", "waiting",
                  "relaying")
        total = {f: sum(getattr(c, f) for c in parts) for f in summed}
        return cls(max(c.now_ms for c in parts), next_due_ms=min(dues) if dues else None,
                   paused=all(c.paused for c in parts), **total)


@dataclass(frozen=True)
class Tick:
    """What one Pump step did and how long the Pump may park."""

    leader: bool
    promoted: int
    reclaimed: int
    park_ms: int
    repeat_due: bool
    now_us: int  # the server's clock at the tick, in microseconds (park_ms counts from its millisecond)
    relay: int = 0  # entries of the queue's relay list the leading Pump forwards

    @classmethod
    def from_reply(cls, r: list) -> Tick:
        return cls(bool(r[0]), int(r[1]), int(r[2]), int(r[3]), bool(r[4]), int(r[5]), int(r[6]) if len(r) > 6 else 0)
