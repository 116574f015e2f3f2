"""The values the engine hands out: what a claim returns and what ``get_job`` reads."""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from . import encrypted, journal, sealed, stored
from .frozen import _new, _set
from .journal import from_ms
from .lenient import loose, whole

STATES = ("waiting", "scheduled", "ready", "active", "completed", "dead", "cancelled")
SETTLED = ("completed", "dead", "cancelled")  # a job's end: what ref.wait() returns on
# What finish answers per item: the state the script decided, or why it changed nothing.
FINISHED = ("completed", "scheduled", "ready", "dead", "waiting")  # waiting: a durable job suspended
REFUSED = ("stale", "missing")


@dataclass(frozen=True)
class MintSpec:
    """One job to mint, fully resolved (ids, JSON and options already checked); ``stored.mint_row`` makes
    it mint.lua's ARGV fields."""

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
    # Time limits in ms (0: none; None, built by hand: the worker applies EMQ_DEFAULT_TIMEOUT; core/stored.py).
    timeout_ms: int | None = None
    soft_timeout_ms: int = 0
    fault: str = ""  # what the worker could not decode (e.g. "args is not JSON"): it ends the job dead as corrupt
    spared: int = 0  # claims given back without spending an attempt (finish.lua's spare)
    sealed: bool = False  # an encrypted job (core/stored.py): its result, error and progress are sealed too
    journal: dict[str, str] | None = None  # a durable job's entries as its claim read them (steps.Journal.seed)

    @property
    def attempt(self) -> int:
        """Which attempt this run spends (1 for the first): the token less the claims given back. The token
        fences; this is what a backoff, a log line or a trace counts."""
        return self.token - self.spared

    @property
    def wait_ms(self) -> int:
        """How long the job waited between becoming due and this claim (server clock)."""
        return max(self.claimed_ms - self.due_ms, 0)

    @classmethod
    def from_reply(cls, reply: list) -> list[Claimed]:
        """The jobs of a bclaim reply: {now, then 7 fields per job, the last the fixed-form ones joined by "|" (lease,
        max_attempts, backoff, due, timeout, spared, meta), or 2 for a packed record}; alike runs share ``of``."""
        jobs: list[Claimed] = []
        now, at, end = int(reply[0]) if reply else 0, 1, len(reply)
        of: tuple = ("",) * 4  # the last lease, attempts, backoff, limits (raw), and the fields a run of jobs shares
        while at < end:
            packed = type(reply[at + 1]) is str and reply[at + 1][:1] == stored.SEP  # id, the record (bclaim.lua)
            f = stored.claimed_row(reply[at], reply[at + 1]) if packed else tuple(reply[at : at + 7])
            at += 2 if packed else 7
            jid, token, name, args, kwargs, group, rest = f
            try:
                lease, tries, backoff, due, limits, spared, meta = rest if type(rest) is tuple else rest.split("|", 6)
                if lease != of[0] or tries != of[1] or backoff != of[2] or limits != of[3]:
                    # The job's own fields too, as placeholders: setting them in a copy grows nothing (performance.md).
                    run = {"id": "", "token": 0, "name": "", "args": None, "kwargs": None, "lease_ms": int(lease),
                           "max_attempts": int(tries), "backoff": _backoff(backoff), "group": "", "due_ms": 0,
                           "claimed_ms": now, "meta": "", "timeout_ms": None, "soft_timeout_ms": 0, "fault": "",
                           "spared": 0, "sealed": False, "journal": None}
                    run["timeout_ms"], run["soft_timeout_ms"] = _limits(limits)
                    of = (lease, tries, backoff, limits, run)  # once every shared field decoded
                values = of[4].copy()  # a copy of every field, then the job's own set: a tenth cheaper than a display
                values["id"], values["token"], values["name"], values["meta"] = jid, int(token), name, meta
                values["args"] = [] if args == "[]" else _json(args, list)
                values["kwargs"] = {} if kwargs == "{}" else _json(kwargs, dict)
                values["group"], values["due_ms"] = group, int(due)
                if spared:  # a job given back without spending an attempt (rate limit, unknown name, suspension)
                    values["spared"] = int(spared)
                job = _new(cls)
                _set(job, "__dict__", values)
            except Exception:  # one bad job never costs the batch: it is quarantined (records its fault)
                job = _off_path(cls, f, now)
                if job is None:  # every field decodes on its own: the error is this decoder's, not the job's
                    raise
            jobs.append(job)
        return jobs


def _off_path(cls: type[Claimed], f: tuple, now: int) -> Claimed | None:
    """A claimed job the plain path did not decode (packed, durable, encrypted, or with a bad field: its fault)."""
    f = (*f[:6], "|".join(f[6])) if type(f[6]) is tuple else f  # a packed row's fields joined, as a hash's come
    jid, token, name, _, kwargs, group, _ = f
    if isinstance(token, list):  # a durable job's token with its journal (bclaim.lua): {token, field, value, ...}
        (job,) = cls.from_reply([now, jid, token[0], *f[2:]])  # decoded as any job (this path included)
        job.__dict__["journal"] = journal.entries(token[1:])  # frozen: set as from_reply sets every field
        return job
    if sealed.is_sealed(kwargs) and (job := encrypted.open_claimed(cls, f, now)) is not None:  # kwargs not JSON
        return job
    fault = _fault(f)
    return cls(jid, int(token), name or "", [], {}, 1000, 1, (1.0, 1.0), group or "", now, now, fault=fault) \
        if fault else None


def _json(text: str, kind: type) -> Any:
    """Decode a job's arguments (none, the common case, skip this: ``from_reply``)."""
    value = json.loads(text)
    if not isinstance(value, kind):
        raise TypeError(f"not a JSON {kind.__name__}")
    return value


# What each field of a bclaim reply must decode as, by its index once the joined one is split (_fault).
_FIELDS = ((3, "args", lambda v: _json(v, list)), (4, "kwargs", lambda v: _json(v, dict)), (6, "lease", int),
           (7, "max_attempts", int), (8, "backoff", lambda v: _backoff.__wrapped__(v)), (9, "due", int),
           (10, "timeout", lambda v: _limits.__wrapped__(v)), (11, "spared", lambda v: int(v) if v else 0))


def _fault(fields: tuple) -> str:
    """Which field of a claimed job does not decode, as the job's dead reason says it; "" when each field
    decodes on its own. Only data errors count (bad JSON, bad numbers, a field of the wrong shape): an
    error of the decoder's own code (a TypeError, NameError... with good data) is not the job's fault."""
    for index, name in ((0, "id"), (2, "fn"), (5, "group"), (6, "lease")):
        if not isinstance(fields[index], str):
            return f"{name} is not text ({type(fields[index]).__name__})"
    flat = [*fields[:6], *fields[6].split("|", 6)]
    if len(flat) != 13:
        return f"the claim's joined fields are {len(flat) - 6}, not 7: {fields[6][:100]!r}"
    for index, name, decode in _FIELDS:
        try:
            decode(flat[index])
        except json.JSONDecodeError:
            return f"{name} is not JSON"
        except (ValueError, TypeError) as exc:
            return f"{name} is not valid ({exc})"[:200]
    return ""


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
    # "completed" | "failed" (retried while attempts remain) | "dead" | "discarded" (dead, no retry) | "corrupt" (dead:
    # value says which field did not decode) | "spared", "ratelimited", "unknown" (no attempt spent): see finish.lua
    outcome: str
    value: str  # result JSON, or error text ("<grace ms>,<cap ms>|<error text>" when unknown)
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
    attempts: int  # attempts spent: claims, less those given back without spending one (a rate limit, a hold)
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
    steps: tuple[journal.Step, ...] = ()  # a durable job's done steps, sleeps, signals, children (core/journal.py)
    encrypted: bool = False  # stored encrypted: args, kwargs, result, errors read opened, or "encrypted" (no key)

    @property
    def settled(self) -> bool:
        """True once the job has ended: completed, dead or cancelled."""
        return self.state in SETTLED

    @classmethod
    def from_fields(cls, queue: str, job_id: str, h: dict[str, str]) -> Job:
        """Build from every field of the job as ``stored`` reads it back (the left-out ones at their defaults)."""
        return cls(
            id=job_id, queue=queue, name=h.get("fn", ""), state=h.get("state", ""),
            args=loose(h.get("args", "[]")), kwargs=loose(h.get("kwargs", "{}")), group=h.get("group", ""),
            attempts=whole(h.get("attempts")) - whole(h.get("spared")), max_attempts=whole(h.get("max_attempts")),
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
            flow=tuple(json.loads(h["flow"])) if "flow" in h else None, steps=journal.steps_of(h),
            encrypted=h.get(encrypted.FLAG) == "yes",
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
    waiting: int = 0  # jobs waiting for their parents (after=, chain steps, callbacks), a signal or children
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
