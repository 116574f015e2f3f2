"""Repeat: every occurrence of a recurrence is minted as a fresh job, exactly once.

Limit: the Valkey half only. A recurrence lives in its queue as a JSON definition (``repeat``)
and a next time (``repeat:next``); the leading Pump of the queue reads the due ones with the
server's now, plans which occurrences to mint under the ``missed`` policy, and mints them with
one compare-and-set script each (``repeat_mint``, through the engine's ``RepeatOps``). The
Django rows are pushed here by ``emq.scheduling.rows``.
"""

from __future__ import annotations

import json
import logging
import uuid
from dataclasses import asdict, dataclass

from ..core import config
from ..core.engine import Queue
from ..core.records import MintSpec
from ..errors import NotRegistered, ServerUnavailable
from ..jobs import JobFunction, lookup
from .cron import Schedule

log = logging.getLogger("emq.repeat")
SCAN_LIMIT = 10_000  # due occurrences examined per recurrence and step; older ones beyond are skipped
BROKEN_RETRY_MS = 60_000  # a definition that cannot be planned is looked at again this much later
_unknown_seen: dict[tuple[str, str], str] = {}  # (queue, recurrence) -> the definition last warned about


@dataclass(frozen=True)
class Definition:
    """What the Pump needs of a recurrence, as stored in the queue's ``repeat`` hash."""

    name: str
    job: str
    cron: str = ""
    every_ms: int = 0
    tz: str = "UTC"
    args: tuple = ()
    kwargs: dict | None = None
    group: str = ""
    missed: str = "skip"
    key: str = ""

    @property
    def schedule(self) -> Schedule:
        return Schedule(self.cron, self.every_ms, self.tz)

    def to_json(self) -> str:
        data = asdict(self)
        data["args"] = list(self.args)
        data["key"] = self.schedule.key
        return json.dumps(data, separators=(",", ":"), sort_keys=True)

    @classmethod
    def from_json(cls, raw: str) -> Definition:
        data = json.loads(raw)
        data["args"] = tuple(data.get("args") or ())
        return cls(**data)


@dataclass(frozen=True)
class Plan:
    """Which due occurrences to mint, how many the policy drops, and the next time after them."""

    mint: list[int]
    skipped: int
    next_ms: int
    more_skipped: bool = False  # past SCAN_LIMIT: skipped is a lower bound


@dataclass(frozen=True)
class Minted:
    """What one compare-and-set did for one recurrence (for the row's read-only fields)."""

    name: str
    created: int
    last_ms: int | None
    next_ms: int


def occurrence_id(name: str, at_ms: int) -> str:
    """The job id of one occurrence: the same (recurrence, instant) always gives the same id."""
    return f"repeat:{name}:{at_ms}"


def plan(schedule: Schedule, next_ms: int, now_ms: int, missed: str, grace_ms: int, cap: int) -> Plan:
    """Decide which occurrences from next_ms up to now_ms to mint.

    An occurrence reached more than grace_ms after its time was missed (no Pump ran): ``skip``
    drops it, ``once`` mints one job for the newest missed one, ``all`` mints the newest ``cap``.
    Occurrences within the grace are always minted.
    """
    due, t = _scan(schedule, next_ms, now_ms)
    dropped = 0
    overflow = t <= now_ms
    if overflow:  # thousands missed: keep a window as long as the first `cap` of them took, before the grace
        span = due[min(cap, len(due) - 1)] - due[0]
        dropped = len(due)
        due, t = _scan(schedule, schedule.next_after(max(now_ms - grace_ms - span - 1, due[-1])), now_ms)
    late = [x for x in due if now_ms - x > grace_ms]
    on_time = [x for x in due if now_ms - x <= grace_ms]
    catch_up = {"skip": [], "once": late[-1:], "all": late[-cap:] if cap > 0 else []}.get(missed, [])
    return Plan(catch_up + on_time, dropped + len(late) - len(catch_up), t, overflow)


def _scan(schedule: Schedule, start_ms: int, now_ms: int) -> tuple[list[int], int]:
    """Occurrences from start_ms up to now_ms (at most SCAN_LIMIT) and the first one not taken."""
    due: list[int] = []
    t = start_ms
    while t <= now_ms and len(due) < SCAN_LIMIT:
        due.append(t)
        t = schedule.next_after(t)
    return due, t


def put(q: Queue, d: Definition) -> bool:
    """Upsert a recurrence in its queue; True when it was (re)armed."""
    return q.repeat.put(d.name, d.to_json())


def drop(q: Queue, name: str) -> bool:
    """Remove a recurrence from a queue; True when it was there."""
    return q.repeat.drop(name)


def names(q: Queue) -> list[str]:
    """The recurrences defined in a queue."""
    return q.repeat.names()


def run_now(q: Queue, d: Definition) -> str:
    """Mint one extra job of a recurrence, ready now (the admin's "run now"); returns its id.

    NotRegistered when no job of that name is known here: the job would only die on a worker.
    """
    spec = _spec(lookup(d.job), d, f"repeat:{d.name}:now-{uuid.uuid4().hex[:8]}", "")
    q.mint([spec])
    return spec.id


def _spec(jf: JobFunction, d: Definition, job_id: str, due_spec: str) -> MintSpec:
    jf = jf.using(job_id=job_id, group=d.group or jf.options.group)
    return jf.spec(d.args, d.kwargs or {}, due_spec, origin=f"repeat:{d.name}")


def _known(q: Queue, d: Definition, raw: str) -> JobFunction | None:
    """The recurrence's job, or None (warned once per change of the definition) when none is known."""
    try:
        jf = lookup(d.job)
    except NotRegistered:
        if _unknown_seen.get((q.name, d.name)) != raw:
            _unknown_seen[(q.name, d.name)] = raw
            log.warning('recurrence %s in queue %s: no job registered as "%s"; its occurrences are skipped, not '
                        "minted to die, until a job of that name exists or the row changes", d.name, q.name, d.job)
        return None
    _unknown_seen.pop((q.name, d.name), None)
    return jf


def mint_due(queue: Queue) -> list[Minted]:
    """Mint the due occurrences of the queue's recurrences; one result per compare-and-set won."""
    now, rows = queue.repeat.due()
    grace_ms = int(config.get("EMQ_REPEAT_GRACE") * 1000)
    cap = int(config.get("EMQ_REPEAT_CATCHUP"))
    done: list[Minted] = []
    for name, next_ms, raw in rows:
        try:
            d = Definition.from_json(raw)
        except (ValueError, TypeError):
            log.error("recurrence %s in queue %s has an unreadable definition; dropped (a re-sync restores a "
                      "valid row)", name, queue.name)
            drop(queue, name)
            continue
        try:
            minted = _mint_one(queue, d, _known(queue, d, raw), next_ms, now, grace_ms, cap)
        except ServerUnavailable:
            raise
        except Exception:
            log.exception("recurrence %s in queue %s cannot be minted; retrying in %ss", name, queue.name,
                          BROKEN_RETRY_MS // 1000)
            _postpone(queue, name, next_ms, raw, now)
            continue
        if minted:
            done.append(minted)
    return done


def _mint_one(q: Queue, d: Definition, jf: JobFunction | None, next_ms: int, now: int, grace_ms: int,
              cap: int) -> Minted | None:
    s = d.schedule
    p = Plan([], 0, s.next_after(now)) if next_ms == 0 else plan(s, next_ms, now, d.missed, grace_ms, cap)
    if jf is None:  # unknown job: move past its occurrences without minting them (counted as skipped)
        p = Plan([], p.skipped + len(p.mint), p.next_ms, p.more_skipped)
    specs = [_spec(jf, d, occurrence_id(d.name, t), f"@{t}") for t in p.mint]
    last = p.mint[-1] if p.mint else None
    _, created = q.repeat.mint(d.name, next_ms, s.key, p.next_ms, last, p.skipped, specs)
    if created is None:
        return None  # another Pump minted it, or the row changed meanwhile: the next step sees the new state
    if (p.skipped or p.more_skipped) and jf is not None:
        at_least = "at least " if p.more_skipped else ""
        log.warning("recurrence %s: %s%s missed occurrence(s) skipped (missed=%s)", d.name, at_least, p.skipped,
                    d.missed)
    for at, made in zip(p.mint, created, strict=True):
        log.info("recurrence %s: minted id=%s new=%s", d.name, occurrence_id(d.name, at), bool(made))
    return Minted(d.name, sum(created), p.mint[-1] if p.mint else None, p.next_ms)


def _postpone(q: Queue, name: str, next_ms: int, raw: str, now: int) -> None:
    """Move a definition that cannot be planned out of the way, so the Pump does not spin on it."""
    try:
        q.repeat.mint(name, next_ms, json.loads(raw)["key"], now + BROKEN_RETRY_MS, None, 0, [])
    except Exception:
        log.exception("recurrence %s in queue %s could not be postponed", name, q.name)
