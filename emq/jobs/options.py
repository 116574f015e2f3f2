"""emq's options for a job, and the checks that refuse values which would only fail on a worker."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.db import transaction

from ..core import config, topology
from ..errors import ConfigurationError

GroupSpec = str | Callable[..., str] | None
MIN_LEASE = 1.0  # seconds: shorter leases cannot be renewed in time (and under 1 ms one rounds to 0)
# (base, cap) seconds of the jittered exponential, or backoff(attempt, exc) -> seconds | None (None: dead).
Backoff = tuple[float, float] | Callable[[int, BaseException], float | None]
# Options a worker reads from its own registry, never from the job: they cannot change per call.
FUNCTION_ONLY = ("retry_on",)
# Options that name other jobs: given per call (.using), never to @emq.job.
CALL_ONLY = ("after",)
AFTER_FAILURE = ("dead", "run")
MAX_PARENTS = 1000  # parents of one job at most; a fan-in of more is a batch (emq.batch)


@dataclass(frozen=True)
class Options:
    """emq's options for a job; None means "the project's setting"."""

    queue: str | None = None
    group: GroupSpec = None
    max_attempts: int | None = None
    backoff: Backoff | None = None
    lease: float | None = None  # seconds
    max_stalled: int | None = None
    job_id: str | None = None
    takes_context: bool = False
    on_commit: bool | None = None  # mint when the surrounding transaction commits, never on rollback (None: setting)
    timeout: float | None = None  # seconds an attempt may run; None: EMQ_DEFAULT_TIMEOUT; math.inf: no limit
    soft_timeout: float | None = None  # seconds after which SoftTimeLimit is raised inside the job (< timeout)
    retry_on: type[BaseException] | tuple[type[BaseException], ...] | None = None  # None: (Exception,)
    after: tuple[Any, ...] | None = None  # JobRefs (or ids in this queue, batch refs) it waits for: "waiting"
    after_failure: str | None = None  # "dead" (None): a parent that did not complete makes it dead; "run": runs
    # Flow control (emq/jobs/unique.py): at most one job per key in unique_for seconds, or debounced.
    unique_for: float | None = None
    unique_key: str | None = None  # None: the job's name + its arguments (debounce: the name)
    unique_until: str | None = None  # "finish" (None) | "start": when the key frees, if before the window ends
    debounce: float | None = None  # seconds of quiet before the one job runs, with the latest call's args
    priority: int | None = None  # -100..100 (None: 0): inside its group's lane, higher first, FIFO among equals
    encrypt: bool | None = None  # store arguments, result, error and progress encrypted (None: EMQ_ENCRYPT)

    def __post_init__(self) -> None:
        if isinstance(self.after, list):  # kept as a tuple: the options stay a value
            object.__setattr__(self, "after", tuple(self.after))


OPTION_NAMES = frozenset(f.name for f in dataclasses.fields(Options))


def waits_for_commit(on_commit: bool | None) -> bool:
    """Whether a mint waits for the commit: on_commit (None: EMQ_ENQUEUE_ON_COMMIT) and the default
    database inside ``transaction.atomic()``. Outside one the mint is at once, as Django's
    ``on_commit`` would run it then, and its reference carries the mint's time."""
    if on_commit is None:
        on_commit = config.get("EMQ_ENQUEUE_ON_COMMIT")
    return bool(on_commit) and in_transaction()


def in_transaction() -> bool:
    """Whether the default database is inside ``transaction.atomic()`` (asked only when it matters)."""
    return transaction.get_connection().in_atomic_block


def check_names(where: str, options: dict[str, Any]) -> None:
    """Refuse option names emq does not know, listing the ones it does."""
    unknown = set(options) - OPTION_NAMES
    if unknown:
        raise TypeError(f"unknown option(s) {sorted(unknown)} for {where}; known: {sorted(OPTION_NAMES)}")


def check(name: str, o: dict[str, Any]) -> None:
    """Refuse option values that would only fail later, on a worker."""
    if o.get("max_attempts") is not None and int(o["max_attempts"]) < 1:
        raise ConfigurationError(f"max_attempts of {name} must be >= 1")
    if o.get("lease") is not None and float(o["lease"]) < MIN_LEASE:
        raise ConfigurationError(
            f"lease of {name} must be at least {MIN_LEASE:g} second (it is renewed every lease/3), not {o['lease']!r}"
        )
    if o.get("job_id") is not None and (not isinstance(o["job_id"], str) or not o["job_id"]):
        raise TypeError(
            f"job_id of {name} must be a non-empty string, not {o['job_id']!r}: e.g. job_id=f\"welcome-{{user_id}}\""
        )
    if o.get("backoff") is not None and not callable(o["backoff"]):
        base, cap = o["backoff"]
        if not 0 <= float(base) <= float(cap):
            raise ConfigurationError(
                f"backoff of {name} must be (base, cap) with 0 <= base <= cap seconds, "
                "or a function (attempt, exc) -> seconds | None"
            )
    if o.get("queue") is not None:
        try:
            topology.check_name(o["queue"])
        except ConfigurationError as exc:
            raise ConfigurationError(f"{exc} (the queue of {name})") from None
    check_limits(name, o.get("timeout"), o.get("soft_timeout"))
    p = o.get("priority")
    if p is not None and (isinstance(p, bool) or not isinstance(p, int) or not -100 <= p <= 100):
        raise ConfigurationError(f"priority of {name} must be a whole number from -100 to 100, not {p!r}")
    if o.get("retry_on") is not None:
        retry_on_tuple(name, o["retry_on"])
    if o.get("after") is not None:
        after_tuple(name, o["after"])
    if o.get("encrypt") is not None and not isinstance(o["encrypt"], bool):
        raise ConfigurationError(f"encrypt of {name} must be True or False, not {o['encrypt']!r}")
    if o.get("after_failure") not in (None, *AFTER_FAILURE):
        raise ConfigurationError(f"after_failure of {name} must be one of {list(AFTER_FAILURE)}, "
                                 f"not {o['after_failure']!r}")


def after_tuple(name: str, value: Any) -> tuple[Any, ...]:
    """after= as a tuple of job references (JobRef, a batch's ref) or job ids; refuse anything else."""
    if isinstance(value, str) or not isinstance(value, list | tuple):
        raise TypeError(f"after of {name} must be a list of jobs (JobRefs or ids), not {value!r}: e.g. after=[ref]")
    if len(value) > MAX_PARENTS:
        raise ConfigurationError(f"after of {name} names {len(value)} jobs, over {MAX_PARENTS}: "
                                 "to run a job after many, give them to emq.batch(..., on_complete=...)")
    for parent in value:
        ok = (isinstance(parent, str) and parent) or (isinstance(getattr(parent, "id", None), str)
                                                      and isinstance(getattr(parent, "queue", None), str))
        if not ok:
            raise TypeError(f"after of {name} holds {parent!r}: give JobRefs (what enqueue returns) or job ids")
    return tuple(value)


def check_limits(name: str, timeout: Any, soft: Any) -> None:
    """A time limit is > 0 seconds (math.inf: none); a soft limit is > 0 and below the time limit."""
    if timeout is not None and not float(timeout) > 0:
        raise ConfigurationError(f"timeout of {name} must be > 0 seconds (math.inf for no limit), not {timeout!r}")
    if soft is None:
        return
    if not 0 < float(soft) < math.inf:
        raise ConfigurationError(f"soft_timeout of {name} must be > 0 seconds, not {soft!r}")
    if timeout is not None and float(soft) >= float(timeout):
        raise ConfigurationError(f"soft_timeout of {name} ({soft} s) must be below its timeout ({timeout} s)")


def retry_on_tuple(name: str, value: Any) -> tuple[type[BaseException], ...]:
    """retry_on as a tuple of exception classes (one class is allowed); refuse anything else."""
    kinds = value if isinstance(value, tuple | list) else (value,)
    for kind in kinds:
        if not (isinstance(kind, type) and issubclass(kind, BaseException)):
            raise ConfigurationError(f"retry_on of {name} must be exception classes, e.g. (IOError,), not {kind!r}")
    return tuple(kinds)


def encrypts(o: Options) -> bool:
    """Whether a job of these options is stored encrypted: its encrypt=, else EMQ_ENCRYPT."""
    return bool(config.get("EMQ_ENCRYPT") if o.encrypt is None else o.encrypt)


def resolved(name: str, o: Options) -> dict[str, Any]:
    """The options of a job that fall back to settings, resolved now (MintSpec's fields)."""
    backoff = config.get("EMQ_BACKOFF") if o.backoff is None or callable(o.backoff) else o.backoff
    return {
        "max_attempts": o.max_attempts or config.get("EMQ_MAX_ATTEMPTS"),
        "lease_ms": int((o.lease or config.get("EMQ_LEASE")) * 1000),
        "max_stalled": config.get("EMQ_MAX_STALLED") if o.max_stalled is None else o.max_stalled,
        "backoff": tuple(backoff),
        **_limits(name, o),
    }


def _limits(name: str, o: Options) -> dict[str, int]:
    """The time limit (the job's, else EMQ_DEFAULT_TIMEOUT) and the soft one, in ms; 0 = none."""
    timeout = config.get("EMQ_DEFAULT_TIMEOUT") if o.timeout is None else o.timeout
    check_limits(name, timeout, o.soft_timeout)
    hard = 0 if timeout is None or timeout == math.inf else max(int(timeout * 1000), 1)
    soft = 0 if o.soft_timeout is None else max(int(o.soft_timeout * 1000), 1)
    return {"timeout_ms": hard, "soft_timeout_ms": soft}
