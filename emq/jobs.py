"""``@emq.job``: the registry of job functions and the ways to enqueue them.

The decorator returns a frozen ``JobFunction``; per-call options go through ``.using(...)``
so a job's own keyword arguments never collide with emq's options (Django's Tasks style).
Workers run only registered jobs, looked up by their stable dotted name.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction

from . import conf, keys, partitions
from .connection import get_client, guard
from .encoding import encode_args
from .engine import MintSpec, Queue
from .errors import ConfigurationError, NotRegistered
from .records import JobRef

registry: dict[str, JobFunction] = {}
declared: dict[str, dict[str, Any]] = {}  # job name -> {"cron": ...} or {"every": ...}; upserted as rows by a Pump
_known_queues: set[tuple[str, str]] = set()

GroupSpec = str | Callable[..., str] | None


@dataclass(frozen=True)
class Options:
    """emq's options for a job; None means "the project's setting"."""

    queue: str | None = None
    group: GroupSpec = None
    max_attempts: int | None = None
    backoff: tuple[float, float] | None = None
    lease: float | None = None  # seconds
    max_stalled: int | None = None
    job_id: str | None = None
    takes_context: bool = False
    on_commit: bool = False  # mint when the surrounding transaction commits; never on rollback


OPTION_NAMES = frozenset(f.name for f in dataclasses.fields(Options))


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
        return self.options.queue or conf.get("EMQ_DEFAULT_QUEUE")

    def using(self, **options: Any) -> JobFunction:
        """A copy with some options changed for the calls made through it."""
        unknown = set(options) - OPTION_NAMES
        if unknown:
            raise TypeError(f"unknown option(s) {sorted(unknown)} for {self.name}; known: {sorted(OPTION_NAMES)}")
        _check(self.name, options)
        return dataclasses.replace(self, options=dataclasses.replace(self.options, **options))

    def enqueue(self, *args: Any, **kwargs: Any) -> JobRef:
        """Mint one job, ready now; it exists in the server when this returns."""
        return self._mint([self.spec(args, kwargs, "")])[0]

    def enqueue_on_commit(self, *args: Any, **kwargs: Any) -> JobRef:
        """Mint one job once the current transaction commits; the arguments are checked now."""
        return self.using(on_commit=True).enqueue(*args, **kwargs)

    def enqueue_in(self, delay: timedelta | float, *args: Any, **kwargs: Any) -> JobRef:
        """Mint one job due after delay (a timedelta or seconds) on the server's clock."""
        seconds = delay.total_seconds() if isinstance(delay, timedelta) else float(delay)
        return self._mint([self.spec(args, kwargs, f"+{max(int(seconds * 1000), 0)}")])[0]

    def enqueue_at(self, when: datetime, *args: Any, **kwargs: Any) -> JobRef:
        """Mint one job due at an aware datetime; a time in the past means ready now."""
        if not isinstance(when, datetime):
            raise TypeError(f"enqueue_at of {self.name} needs a datetime, not {type(when).__name__}")
        if when.tzinfo is None or when.utcoffset() is None:
            raise ValueError(
                f"enqueue_at of {self.name} got a naive datetime ({when.isoformat()}); pass an aware one, "
                "e.g. django.utils.timezone.now() + timedelta(...) or datetime(..., tzinfo=ZoneInfo(...))"
            )
        return self._mint([self.spec(args, kwargs, f"@{int(when.timestamp() * 1000)}")])[0]

    def enqueue_many(self, calls: Iterable[tuple[Sequence[Any], dict[str, Any]]]) -> list[JobRef]:
        """Mint many jobs ready now: one round trip per chunk of 1,000, each chunk atomic."""
        if self.options.job_id:
            raise ValueError(f"enqueue_many of {self.name} cannot share one job_id between jobs")
        resolved = self._resolved()  # settings read once per call, not once per job
        return self._mint([self.spec(tuple(a), dict(k), "", resolved=resolved) for a, k in calls])

    def spec(
        self, args: Sequence[Any], kwargs: dict[str, Any], due: str, origin: str = "", resolved: dict | None = None
    ) -> MintSpec:
        """Resolve options and encode arguments for one job; raises before anything is written."""
        args_json, kwargs_json = encode_args(self.name, tuple(args), kwargs)
        o = self.options
        return MintSpec(
            id=o.job_id or uuid.uuid4().hex,
            name=self.name,
            args_json=args_json,
            kwargs_json=kwargs_json,
            group=self._group(args, kwargs),
            due=due,
            if_absent=bool(o.job_id),
            origin=origin,
            **(resolved or self._resolved()),
        )

    def _resolved(self) -> dict[str, Any]:
        """The options that fall back to settings, resolved now."""
        o = self.options
        return {
            "max_attempts": o.max_attempts or conf.get("EMQ_MAX_ATTEMPTS"),
            "lease_ms": int((o.lease or conf.get("EMQ_LEASE")) * 1000),
            "max_stalled": conf.get("EMQ_MAX_STALLED") if o.max_stalled is None else o.max_stalled,
            "backoff": tuple(o.backoff or conf.get("EMQ_BACKOFF")),
        }

    def _group(self, args: Sequence[Any], kwargs: dict[str, Any]) -> str:
        group = self.options.group
        if callable(group):
            group = group(*args, **kwargs)
        if group in (None, ""):
            return keys.DEFAULT_GROUP
        return str(group)

    def _mint(self, specs: list[MintSpec]) -> list[JobRef]:
        specs, batches = partitions.route(self.queue, specs)  # one batch unless the queue is partitioned
        if conf.get("EMQ_EAGER"):
            def act() -> None:
                self._run_inline(specs)
        else:
            def act() -> None:
                self._write(batches)
        if self.options.on_commit:
            # The ids are chosen now, so the caller holds refs before the jobs exist.
            transaction.on_commit(act)
        else:
            act()
        return [JobRef(s.id, self.queue) for s in specs]

    def _run_inline(self, specs: list[MintSpec]) -> None:
        from .eager import run_inline

        for spec in specs:
            run_inline(self, spec)

    def mint_now(self, specs: list[MintSpec]) -> None:
        """Write resolved jobs to their queue (its partitions, when it has some) at once."""
        self._write(partitions.route(self.queue, specs)[1])

    @staticmethod
    def _write(batches: dict[str, list[MintSpec]]) -> None:
        for name, batch in batches.items():
            q = Queue(name)
            remember_queue(q)
            q.mint(batch)


def _check(name: str, o: dict[str, Any]) -> None:
    """Refuse option values that would only fail later, on a worker."""
    if o.get("max_attempts") is not None and int(o["max_attempts"]) < 1:
        raise ConfigurationError(f"max_attempts of {name} must be >= 1")
    if o.get("lease") is not None and float(o["lease"]) <= 0:
        raise ConfigurationError(f"lease of {name} must be > 0 seconds")
    if o.get("backoff") is not None:
        base, cap = o["backoff"]
        if not 0 <= float(base) <= float(cap):
            raise ConfigurationError(f"backoff of {name} must be (base, cap) with 0 <= base <= cap seconds")
    if o.get("queue") is not None and not str(o["queue"]).strip("{}"):
        raise ConfigurationError(f"queue name of {name} must not be empty")
    for ch in "{}":
        if ch in str(o.get("queue") or ""):
            raise ConfigurationError(f"queue name of {name} must not contain braces (they are the hash tag)")


def remember_queue(q: Queue) -> None:
    """Add a queue to the registry the admin reads, once per process."""
    key = (q.keys.prefix, partitions.logical(q.name))
    if key not in _known_queues:
        with guard():
            get_client().sadd(keys.registry_queues(q.keys.prefix), key[1])
        _known_queues.add(key)


def job(func: Callable[..., Any] | None = None, /, **options: Any) -> Any:
    """Register a function as a job: ``@emq.job`` or ``@emq.job(queue=..., cron="0 3 * * *")``."""
    recurrence = {k: options.pop(k) for k in ("cron", "every") if k in options}
    unknown = set(options) - OPTION_NAMES
    if unknown:
        raise TypeError(f"unknown option(s) {sorted(unknown)} for @emq.job; known: {sorted(OPTION_NAMES)}")

    def register(f: Callable[..., Any]) -> JobFunction:
        name = f"{f.__module__}.{f.__qualname__}"
        _check(name, options)
        jf = JobFunction(f, name, Options(**options))
        registry[name] = jf
        if recurrence:
            declared[name] = recurrence
        return jf

    return register(func) if func is not None else register


def lookup(name: str) -> JobFunction:
    """The registered job of that name, or NotRegistered saying so."""
    found = registry.get(name)
    if found is None:
        found = _resolve_task(name)
    if found is None:
        raise NotRegistered(f'no job registered as "{name}"')
    return found


def _resolve_task(name: str) -> JobFunction | None:
    """A django.tasks Task found by its module path (None without Django's Tasks framework)."""
    try:
        from .backends import resolve_task
    except ImportError:
        return None
    return resolve_task(name)


def get_job(job_id: str, queue: str | None = None):
    """Read a job by id from its queue (default: EMQ_DEFAULT_QUEUE), partitioned or not."""
    return partitions.get_job(job_id, queue or conf.get("EMQ_DEFAULT_QUEUE"))
