"""``@emq.job`` and ``JobFunction``: a registered job and the ways to enqueue it.

The decorator returns a frozen ``JobFunction``; per-call options go through ``.using(...)``
so a job's own keyword arguments never collide with emq's options (Django's Tasks style).
Workers run only registered jobs, looked up by their stable dotted name.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Any

from django.db import transaction

from ..core import config, encrypted, ids, keys, topology
from ..core.encoding import encode_args
from ..core.engine.quotas import Refused
from ..core.logical import JobRef, partition
from ..core.quotas import exceeded
from ..core.records import MintSpec, from_ms
from ..core.registry import remember_queue
from ..errors import ConfigurationError
from . import arguments, eager, plan, tracing, unique
from .canvas import Signature
from .dependent import mint_after
from .options import CALL_ONLY, FUNCTION_ONLY, Options, check, check_names, encrypts, resolved, waits_for_commit
from .registry import declared, registry

# Seconds ahead a due time may be, at most (about 1,000 years): any due time stays a date that
# datetime, every page and the server's millisecond scores (exact to year 287,000) hold, with
# centuries to spare for a retention or a backoff added to it; past it, a due time is a mistake
# (seconds taken for ms, a year typed 9999 for "never").
MAX_DELAY = 1000 * 365.25 * 86400


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def ms_up(when: datetime, what: str = "a due time") -> int:
    """Epoch ms of a due time, rounded up: the server keeps due times in whole ms, and a due time
    truncated could start the job up to 1 ms before the time asked for. ValueError past MAX_DELAY."""
    d = when - _EPOCH  # exact (days, seconds, microseconds), unlike a float timestamp far from 1970
    ms = -(-((d.days * 86_400 + d.seconds) * 1_000_000 + d.microseconds) // 1000)
    if ms > (time.time() + MAX_DELAY) * 1000:
        raise ValueError(f"{what} is {when.isoformat()}, more than 1,000 years ahead: a due time so far is a "
                         "mistake (seconds taken for ms?); give one within 1,000 years, or do not enqueue the job")
    return ms


@dataclass(frozen=True)
class JobFunction:
    """A registered job: call it to run in-process, or enqueue it to run on a worker."""

    func: Callable[..., Any]
    name: str
    options: Options = field(default_factory=Options)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.func(*args, **kwargs)

    @property
    def queue(self) -> str:
        return self.options.queue or config.get("EMQ_DEFAULT_QUEUE")

    def using(self, **options: Any) -> JobFunction:
        """A copy with some options changed for the calls made through it."""
        check_names(self.name, options)
        check(self.name, options)
        unique.check(self.name, options)
        fixed = [k for k in FUNCTION_ONLY if k in options]
        if "backoff" in options and (callable(options["backoff"]) or callable(self.options.backoff)):
            fixed.append("a backoff function")
        if fixed:
            raise ConfigurationError(
                f"{' and '.join(fixed)} of {self.name} cannot change per call: a worker reads it from the "
                "registered job, not from the job's data; set it in @emq.job(...)"
            )
        merged = dataclasses.replace(self.options, **options)
        unique.check_combined(self.name, merged)
        return dataclasses.replace(self, options=merged)

    def s(self, *args: Any, **kwargs: Any) -> Signature:
        """A signature of this job: a chain step or batch callback that takes the previous result first."""
        return Signature(self, tuple(args), dict(kwargs))

    def si(self, *args: Any, **kwargs: Any) -> Signature:
        """An immutable signature: a chain step or batch callback that takes only these arguments."""
        return Signature(self, tuple(args), dict(kwargs), takes_result=False)

    def enqueue(self, *args: Any, **kwargs: Any) -> JobRef:
        """Mint one job, ready now; it exists in the server when this returns."""
        return self._mint_one(args, kwargs, "")

    def enqueue_on_commit(self, *args: Any, **kwargs: Any) -> JobRef:
        """Mint one job once the current transaction commits; the arguments are checked now."""
        return self.using(on_commit=True).enqueue(*args, **kwargs)

    def enqueue_in(self, delay: timedelta | float, *args: Any, **kwargs: Any) -> JobRef:
        """Mint one job due after delay (a timedelta or seconds) on the server's clock."""
        seconds = delay.total_seconds() if isinstance(delay, timedelta) else float(delay)
        if not seconds < MAX_DELAY:  # also NaN and infinity
            raise ValueError(f"enqueue_in of {self.name}: a delay of {delay!r} is past what a date can hold; "
                             f"give at most {MAX_DELAY:.0f} seconds (about 1,000 years)")
        return self._mint_one(args, kwargs, f"+{max(int(seconds * 1000), 0)}")

    def enqueue_at(self, when: datetime, *args: Any, **kwargs: Any) -> JobRef:
        """Mint one job due at an aware datetime; a time in the past means ready now (over 1,000 years: refused)."""
        if not isinstance(when, datetime):
            raise TypeError(f"enqueue_at of {self.name} needs a datetime, not {type(when).__name__}")
        if when.tzinfo is None or when.utcoffset() is None:
            raise ValueError(
                f"enqueue_at of {self.name} got a naive datetime ({when.isoformat()}); pass an aware one, "
                "e.g. django.utils.timezone.now() + timedelta(...) or datetime(..., tzinfo=ZoneInfo(...))"
            )
        return self._mint_one(args, kwargs, f"@{ms_up(when, f'the due time of enqueue_at of {self.name}')}")

    def enqueue_many(self, calls: Iterable[tuple[Sequence[Any], dict[str, Any]]]) -> list[JobRef]:
        """Mint many jobs ready now: one round trip per chunk of 1,000, each chunk atomic."""
        if self.options.job_id:
            raise ValueError(f"enqueue_many of {self.name} cannot share one job_id between jobs")
        if p := plan.usable(self):
            return p.mint_many(self, calls)
        resolved = self._resolved()  # settings read once per call, not once per job
        return self._mint([self.spec(tuple(a), dict(k), "", resolved=resolved) for a, k in calls])

    def spec(
        self, args: Sequence[Any], kwargs: dict[str, Any], due: str, origin: str = "", resolved: dict | None = None,
        prepended: bool = False,
    ) -> MintSpec:
        """Resolve options, check and encode arguments for one job; raises before anything is written.

        ``prepended``: a previous result will come first (a chain step): the arguments are checked with it.
        """
        o = self.options
        arguments.check(self.name, self.func, o.takes_context, (None, *args) if prepended else args, kwargs)
        args_json, kwargs_json = encode_args(self.name, tuple(args), kwargs)
        flow = unique.spec(self.name, o, args_json, kwargs_json) if o.unique_for or o.debounce else ""
        args_json, kwargs_json = encrypted.seal_call(args_json, kwargs_json, encrypts(o))  # after unique's hash
        return MintSpec(
            id=o.job_id or ids.new(self.queue),
            name=self.name,
            args_json=args_json,
            kwargs_json=kwargs_json,
            group=self.group_of(args, kwargs),
            due=unique.due(o, due),
            if_absent=bool(o.job_id),
            origin=origin,
            unique=flow,
            priority=o.priority or 0,
            **(resolved or self._resolved()),
        )

    def _mint_one(self, args: tuple, kwargs: dict[str, Any], due: str) -> JobRef:
        """One job: by the function's plan in the common case (``plan.py``), else the general path."""
        p = plan.usable(self)
        return p.mint(self, args, kwargs, due) if p else self._mint([self.spec(args, kwargs, due)])[0]

    def _resolved(self) -> dict[str, Any]:
        """The options that fall back to settings, resolved now."""
        return resolved(self.name, self.options)

    def group_of(self, args: Sequence[Any], kwargs: dict[str, Any]) -> str:
        """The lane a call's job goes to: the options' group, or what their function of the arguments says."""
        group = self.options.group
        if callable(group):
            group = group(*args, **kwargs)
        if group in (None, ""):
            return keys.DEFAULT_GROUP
        return str(group)

    def _mint(self, specs: list[MintSpec]) -> list[JobRef]:
        o, inline = self.options, config.get("EMQ_EAGER")
        if o.after is not None and not inline:
            return mint_after(self, specs)
        later = waits_for_commit(o.on_commit)
        if not (later or inline):
            return self.mint_now(specs)  # the common case
        # Eager runs them here; on_commit chooses the ids now, so the caller holds refs before the jobs exist.
        specs, batches = topology.route(self.queue, specs)
        act = partial(_run_inline, self, specs) if inline else partial(_write, self, batches)
        if later:
            transaction.on_commit(act)
        else:
            act()
        return [JobRef(s.id, self.queue) for s in specs]

    def mint_now(self, specs: list[MintSpec]) -> list[JobRef]:
        """Write resolved jobs to their queue (its partitions, when it has some) at once.

        Each reference carries the server's time of its mint, the ``created`` its job stores; a unique
        call that minted nothing gets the reference of the job holding its key (``created`` False).
        """
        return self.placed(specs)[1]()

    def placed(self, specs: list[MintSpec]) -> tuple[list[MintSpec], Callable[[], list[JobRef]]]:
        """Place resolved jobs in their queue's partitions now: the specs with their final ids (a
        partition marks a generated one), and the call that mints them (``mint_now``'s refs), now or
        later: the Tasks backend returns a result's id before a mint that waits for the commit."""
        placed, batches = topology.route(self.queue, specs)
        return placed, partial(_mint_placed, self, placed, batches)


def _mint_placed(fn: JobFunction, placed: list[MintSpec], batches: dict[str, list[MintSpec]]) -> list[JobRef]:
    stamps = _write(fn, batches)
    when = {ms: from_ms(ms) for ms, _ in set(stamps.values())}  # one datetime a chunk, not one a job
    refs = [_ref(s.id, fn.queue, when[stamps[s.id][0]], stamps[s.id][1]) for s in placed]
    _within_quota(fn.queue, [stamps[s.id][1] for s in placed], refs)
    return refs


def _run_inline(fn: JobFunction, specs: list[MintSpec]) -> None:
    for spec in specs:
        eager.run_inline(fn, spec)


def _write(fn: JobFunction, batches: dict[str, list[MintSpec]]) -> dict[str, tuple[int, bool | str]]:
    """Mint each batch in its physical queue inside one PRODUCER span; per id, the server ms of its
    mint and what the mint answered (``Queue.mint_stamped``: a str is the holder of its unique key)."""
    stamps: dict[str, tuple[int, bool | str]] = {}
    if not any(batches.values()):
        return stamps
    if not tracing.on():
        for name, batch in batches.items():
            _write_batch(name, batch, stamps)
        return stamps
    first = next(b for b in batches.values() if b)[0].id
    with tracing.producer(fn.name, fn.queue, first, sum(map(len, batches.values()))) as carrier:
        for name, batch in batches.items():
            _write_batch(name, tracing.stamped(batch, carrier), stamps)
    return stamps


def _write_batch(name: str, batch: list[MintSpec], stamps: dict[str, tuple[int, bool | str]]) -> None:
    """Mint one physical queue's batch; record the server ms of its mint and its answer for each id."""
    q = partition(name)
    remember_queue(q)
    now_ms, made = q.mint_stamped(batch)
    if len(batch) == 1:
        stamps[batch[0].id] = (now_ms, made[0])
    else:
        stamps.update((s.id, (now_ms, m)) for s, m in zip(batch, made, strict=True))


def _within_quota(queue: str, answers: list[Any], refs: list[JobRef]) -> None:
    """Raise QuotaExceeded when a quota kept some jobs out (nothing written for them; emq.core.quotas)."""
    refused = [m for m in answers if m.__class__ is Refused]
    if refused:
        raise exceeded(queue, refused, [r for r, m in zip(refs, answers, strict=True) if m.__class__ is not Refused])


def _ref(job_id: str, queue: str, when: Any, made: bool | str) -> JobRef:
    """The reference a mint answers: a str is the id of the job that holds the call's unique key."""
    return JobRef(made if isinstance(made, str) else job_id, queue, when, made is True)


def job(func: Callable[..., Any] | None = None, /, **options: Any) -> Any:
    """Register a function as a job: ``@emq.job`` or ``@emq.job(queue=..., cron="0 3 * * *")``."""
    recurrence = {k: options.pop(k) for k in ("cron", "every") if k in options}
    check_names("@emq.job", options)
    per_call = [k for k in CALL_ONLY if k in options]
    if per_call:
        raise ConfigurationError(f"{per_call[0]} names other jobs, so it is given per call: "
                                 f"job.using({per_call[0]}=[...]).enqueue(...), not @emq.job({per_call[0]}=...)")

    def register(f: Callable[..., Any]) -> JobFunction:
        name = f"{f.__module__}.{f.__qualname__}"
        check(name, options)
        unique.check(name, options)
        jf = JobFunction(f, name, Options(**options))
        registry[name] = jf
        if recurrence:
            declared[name] = recurrence
        return jf

    return register(func) if func is not None else register
