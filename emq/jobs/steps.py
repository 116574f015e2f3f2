"""Durable jobs: ``ctx.step``, ``ctx.sleep``, ``ctx.wait_for`` and ``emq.signal`` (DESIGN rule 12).

A run of a durable job gets its journal with its claim (the claim's HGETALL reads it anyway: no round
trip; a context made outside a worker's run reads it at its first durable call), and looks each step
up by name, each sleep by its place in the run: what a run recorded, later runs find and return at
once, without calling it again. A step's result is written under the attempt's fencing token
(``journal_put.lua``), so a stale attempt's step is refused (``LeaseExpired``). A suspension ends
the run at once by raising ``Suspended``, a BaseException the job's ``except Exception`` lets pass;
the worker turns it into finish's "suspended" item, which gives the slot back without spending an
attempt (``_suspend.lua``). The job's code runs again from the top when it wakes, so it must be
deterministic between steps (docs/guides/durable-jobs.md).
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from ..core import config, journal, journal_ops
from ..core.encoding import dumps
from ..errors import Cancelled, LeaseExpired, PayloadTooLarge

MAX_SECONDS = 1000 * 365.25 * 86400  # a wake time or a timeout stays a date every page can show
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


class Suspended(BaseException):
    """Ends a durable job's run at a sleep or a wait; never seen by the job's ``except Exception``.

    ``spec`` is finish's "suspended" value, ``<kind>|<arg>|<name>`` (``_suspend.lua``).
    """

    def __init__(self, spec: str, what: str) -> None:
        super().__init__(what)
        self.spec = spec


class Journal:
    """One run's view of its job's journal: what the job's claim read (``seed``), or read at the run's first
    durable call (a context made outside a worker's run). Under EMQ_EAGER ``inline`` is
    ``eager.run_inline`` (a spawned child runs now) and nothing is stored nor suspends: a sleep returns at once,
    a wait returns None."""

    __slots__ = ("fields", "now_ms", "read_at", "names", "sleeps", "spawns", "children", "kids", "inline", "inside",
                 "sealed")

    def __init__(self, inline: Callable[[Any, Any], Any] | None = None) -> None:
        self.fields: dict[str, str] | None = None
        self.now_ms, self.read_at = 0, 0.0
        self.names: set[tuple[str, str]] = set()
        self.sleeps = self.spawns = self.children = 0
        self.kids: list[tuple[str, str, str | None]] = []  # spawned since the last wait: (queue, id, result inline)
        self.inline = inline
        self.inside: str | None = None  # the step whose fn runs now: durable calls go between steps, not in them
        self.sealed = False  # an encrypted job's: its step results are stored sealed, as its result is

    def seed(self, fields: dict[str, str] | None, now_ms: int) -> None:
        """The journal as the job's claim read it, with the claim's server clock: no read of its own (the claim's
        HGETALL had the entries anyway). What changed since is the server's to see: a signal or a deadline that
        came after the claim makes the suspend script ready the job at once (``_suspend.lua``), and the next
        run's claim brings it. The clock runs on from now, after the claim: never ahead of the server's."""
        self.fields, self.now_ms, self.read_at = fields if fields is not None else {}, now_ms, time.monotonic()

    def server_ms(self) -> int:
        """The server's clock now, as read with the journal plus the time since (DESIGN rule 1)."""
        return self.now_ms + int((time.monotonic() - self.read_at) * 1000)


def loaded(ctx: Any, call: str = "") -> Journal:
    """The run's journal: its claim's (``Journal.seed``), else read from the server at its first durable call
    (``call``, named in errors)."""
    j = ctx.journal
    if j.inside is not None:
        raise RuntimeError(f"{call or 'a durable call'} inside step {j.inside!r} of job {ctx.job_id}: sleeps, waits, "
                           "spawns and steps go between steps, not in them (a step's fn runs once, as a whole)")
    if j.fields is None:
        if j.inline:
            j.fields, j.now_ms, j.read_at = {}, int(time.time() * 1000), time.monotonic()
        else:
            read = journal_ops.read(ctx.queue, ctx.job_id)
            j.fields, j.now_ms, j.read_at = read.fields, read.now_ms, time.monotonic()
    return j


def once(ctx: Any, j: Journal, kind: str, name: Any, call: str) -> str:
    """Check that name is used once in this run by calls of one kind; returns it."""
    if not isinstance(name, str) or not name:
        raise TypeError(f"{call} of job {ctx.job_id} needs a name, a non-empty str, not {name!r}")
    if (kind, name) in j.names:
        raise ValueError(
            f"{call}({name!r}) of job {ctx.job_id} is used twice in one run: each needs a name of its own, "
            f"the same in every run (e.g. add the item's index: f\"{name}-{{i}}\")")
    j.names.add((kind, name))
    return name


def write(ctx: Any, field: str, text: str, child: str = "") -> str:
    """Write an entry (and/or a child about to be spawned) under the attempt's token; the stored value."""
    status, stored = journal_ops.put(ctx.queue, ctx.job_id, ctx.token, field, text, child)
    if status == "ok":
        return stored
    what = field.split(":", 1)[-1] if field else f"child {child}"
    if status == "cancelled":
        ctx.stop.set()
        raise Cancelled(f"job {ctx.job_id} was cancelled; {what!r} was not recorded")
    raise LeaseExpired(f"job {ctx.job_id}: attempt {ctx.token} no longer holds it (its lease expired and it was "
                       f"reclaimed, or it ended: {status}); {what!r} was not recorded: the job's current run will")


def record(ctx: Any, j: Journal, field: str, text: str) -> Any:
    """Keep a JSON entry in the journal (the server's; the run's under EMQ_EAGER); its value as later runs read it."""
    j.fields[field] = f"0|0|{text}" if j.inline else write(ctx, field, text)  # type: ignore[index]
    return journal.value(j.fields[field])  # type: ignore[index]


def encoded(ctx: Any, what: str, value: Any) -> str:
    """A step's result as JSON, or a TypeError (PayloadTooLarge over EMQ_MAX_PAYLOAD) that names the step."""
    try:
        text = dumps(value)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{what} of job {ctx.job_id} returned a {type(value).__name__}, which is not JSON ({exc}); "
                        "return dicts, lists, str, int, float, bool or None") from None
    return sized(text, f"{what} of job {ctx.job_id}")


def sized(text: str, what: str) -> str:
    """JSON kept on a job (a step's result, a signal's payload) within EMQ_MAX_PAYLOAD, or PayloadTooLarge."""
    limit = config.get("EMQ_MAX_PAYLOAD")
    if len(text) > limit:
        raise PayloadTooLarge(f"{what}: {len(text)} bytes of JSON, over EMQ_MAX_PAYLOAD ({limit}); it is kept on the "
                              "job: store large data elsewhere (a model row, a file) and keep its id")
    return text


def step(ctx: Any, name: str, fn: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
    """``ctx.step``: fn's result, from the journal when a run recorded it, else from calling fn now."""
    j = loaded(ctx, "ctx.step")
    field = journal.field("s", once(ctx, j, "s", name, "ctx.step"))
    if field in j.fields:  # type: ignore[operator]
        return journal.value(j.fields[field])  # type: ignore[index]
    j.inside = name
    try:
        result = fn(*args, **kwargs)
    finally:
        j.inside = None
    return record(ctx, j, field, journal.sealed_value(encoded(ctx, f"step {name!r}", result), j.sealed))


async def step_async(ctx: Any, name: str, fn: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
    """``ctx.step_async``: ``step`` for a coroutine; fn's result is awaited, the round trips run off the loop."""
    j = ctx.journal if ctx.journal.fields is not None and ctx.journal.inside is None else \
        await asyncio.to_thread(loaded, ctx, "ctx.step_async")
    field = journal.field("s", once(ctx, j, "s", name, "ctx.step_async"))
    if field in j.fields:
        return journal.value(j.fields[field])
    j.inside = name
    try:
        result = fn(*args, **kwargs)
        if inspect.isawaitable(result):
            result = await result
    finally:
        j.inside = None
    text = journal.sealed_value(encoded(ctx, f"step {name!r}", result), j.sealed)
    return await asyncio.to_thread(record, ctx, j, field, text)


def sleep(ctx: Any, seconds: float | timedelta) -> None:
    """``ctx.sleep``: end the run until seconds from the first run that reached this sleep (server clock)."""
    ms = _ms(seconds, f"ctx.sleep of job {ctx.job_id}")
    _sleep(ctx, loaded(ctx, "ctx.sleep"), f"+{ms}", ms <= 0)


def sleep_until(ctx: Any, when: datetime) -> None:
    """``ctx.sleep_until``: end the run until an aware datetime."""
    if not isinstance(when, datetime) or when.tzinfo is None or when.utcoffset() is None:
        raise TypeError(f"ctx.sleep_until of job {ctx.job_id} needs an aware datetime, not {when!r}: "
                        "e.g. django.utils.timezone.now() + timedelta(days=1)")
    d = when - _EPOCH
    ms = -(-((d.days * 86_400 + d.seconds) * 1_000_000 + d.microseconds) // 1000)  # rounded up, as enqueue_at
    if ms > MAX_SECONDS * 1000:
        raise ValueError(f"ctx.sleep_until of job {ctx.job_id}: {when.isoformat()} is too far ahead")
    j = loaded(ctx, "ctx.sleep_until")
    _sleep(ctx, j, f"@{ms}", ms <= j.server_ms())


def _sleep(ctx: Any, j: Journal, arg: str, over: bool) -> None:
    """The run's next sleep: returns once its wake time (the first run's) has passed, else suspends."""
    j.sleeps += 1
    stored = j.fields.get(journal.field("z", str(j.sleeps)))  # type: ignore[union-attr]
    if stored is not None:
        wake = journal.value(stored)
        if not isinstance(wake, int) or wake <= j.server_ms():
            return
    elif over or j.inline:  # a sleep of nothing (or EMQ_EAGER): nothing to wait for
        return
    raise Suspended(f"z|{arg}|{j.sleeps}", f"sleep {j.sleeps}")


def wait_for(ctx: Any, name: str, timeout: float | timedelta | None) -> Any:
    """``ctx.wait_for``: the signal's payload, None once the wait timed out; else the run ends until either."""
    j = loaded(ctx, "ctx.wait_for")
    once(ctx, j, "w", name, "ctx.wait_for")
    ms = "" if timeout is None else str(_ms(timeout, f"ctx.wait_for({name!r}) of job {ctx.job_id}"))
    got = j.fields.get(journal.field("w", name))  # type: ignore[union-attr]
    if got is not None:
        return journal.value(got)
    deadline = j.fields.get(journal.field(journal.DEADLINE, name))  # type: ignore[union-attr]
    if j.inline or (deadline is not None and int(deadline) <= j.server_ms()):
        return None
    raise Suspended(f"w|{ms}|{name}", f"wait for signal {name!r}")


def _ms(seconds: float | timedelta, what: str) -> int:
    value = seconds.total_seconds() if isinstance(seconds, timedelta) else seconds
    if isinstance(value, bool) or not isinstance(value, int | float) or not value < MAX_SECONDS:
        raise ValueError(f"{what} takes seconds (a number or a timedelta) under {MAX_SECONDS:.0f}, not {seconds!r}")
    return max(int(value * 1000), 0)


def signal(job_id: str, name: str, payload: Any = None, queue: str | None = None) -> bool:
    """Send signal ``name`` to a job, in whichever queue holds it (or ``queue``); True when the job took it
    (its ``ctx.wait_for(name)`` returns payload).

    A job that waits for it is ready at once; one that has not reached the wait finds it there.
    False for a job that ended or does not exist, a second signal of the name, or one after the
    wait's timeout.
    """
    if not isinstance(name, str) or not name:
        raise TypeError(f"emq.signal to job {job_id!r} needs a name, a non-empty str, not {name!r}")
    try:
        text = dumps(payload)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"emq.signal({job_id!r}, {name!r}): the payload is not JSON ({exc})") from None
    sized(text, f"the payload of signal {name!r} to job {job_id}")
    return journal_ops.deliver(job_id, name, text, queue) == "ok"
