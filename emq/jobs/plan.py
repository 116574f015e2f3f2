"""An enqueue's plan: what every enqueue of one job function shares, worked out once per settings.

``enqueue``, ``enqueue_in``, ``enqueue_at`` and ``enqueue_many`` ask ``usable(fn)``. A plan exists for
the common case — an unpartitioned queue, no ``after=``, ``on_commit``, unique key or debounce,
EMQ_EAGER and EMQ_DURABLE off, no encryption, no transaction to wait for (EMQ_ENQUEUE_ON_COMMIT) — and mints one
job with one call of the lean ``mint_one.lua`` (many: chunks of ``mint_many.lua``, which takes what
the jobs share once a chunk): no settings read, no options resolved, no routing, no ``MintSpec``
built per job. Anything else, and any call while
tracing is on, takes the general path (``JobFunction._mint``).

Every check stays, at its price: the arguments against the signature (``arguments.Shape``), JSON
and size (``encode_args``), the group when it is a function of the arguments. A plan is kept on
its ``JobFunction`` with the settings epoch it was made in (``config.current_epoch``): a changed
setting makes the next enqueue work it out again.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ..core import config, ids, stored, topology
from ..core.encoding import encode_args
from ..core.engine import Queue
from ..core.engine.quotas import Refused
from ..core.logical import JobRef, partition
from ..core.quotas import exceeded
from ..core.records import MintSpec, from_ms
from ..core.registry import remember_queue
from . import tracing
from .arguments import Shape, shape
from .kind import JobLike
from .options import encrypts, in_transaction, resolved

HELD = "_emq_plan"  # the attribute of a JobFunction that keeps (epoch, plan or None)


@dataclass(frozen=True)
class Plan:
    """One job function's enqueue, all but what each call brings (arguments, id, group, due time)."""

    queue: str
    engine: Queue
    shared: MintSpec  # the fields every job of the function shares
    fill: Callable[[str, str, str, str, str], list[Any]]  # a call's mint row from its own fields (stored.mint_filler)
    group: str | None  # None: the options' group is a function of the arguments
    limit: int  # EMQ_MAX_PAYLOAD
    shape: Shape | None  # None: Python cannot tell the function's signature, nothing to check
    head: list[Any]  # what the jobs of a chunk of enqueue_many share (stored.mint_many_head)
    on_commit: bool  # EMQ_ENQUEUE_ON_COMMIT: a call inside a transaction takes the general path

    def row(self, fn: JobLike, args: Sequence[Any], kwargs: dict[str, Any], job_id: str, due: str) -> list[Any]:
        """One call checked (signature, JSON, size) and encoded as its mint row."""
        if self.shape is not None:
            self.shape.check(fn.name, args, kwargs)
        args_json, kwargs_json = encode_args(fn.name, args, kwargs, self.limit)
        group = self.group if self.group is not None else fn.group_of(args, kwargs)
        return self.fill(job_id, args_json, kwargs_json, group, due)

    def mint(self, fn: JobLike, args: Sequence[Any], kwargs: dict[str, Any], due: str) -> JobRef:
        """Check, encode and mint one call; it exists in the server when this returns."""
        job_id = self.shared.id or ids.new(self.queue)
        now_ms, made = self.engine.mint_one(self.row(fn, args, kwargs, job_id, due), self.shared.if_absent)
        if made.__class__ is Refused:  # its group (or the queue) is at its quota: nothing written
            raise exceeded(self.queue, [made], [])
        return JobRef(job_id, self.queue, _when(now_ms), made)

    def mint_many(self, fn: JobLike, calls: Iterable[tuple[Sequence[Any], dict[str, Any]]]) -> list[JobRef]:
        """Check and encode every call before anything is written, then mint them ready now in chunks
        of mint_many.lua: what the jobs share goes once a chunk, each job adds its id, arguments and group."""
        name, limit, check = fn.name, self.limit, self.shape.check if self.shape is not None else None
        args_of, kwargs_of, groups, fixed = [], [], [], self.group is not None
        for given, named in calls:
            args = given if type(given) is tuple else tuple(given)  # a copy only when it is not one already
            kwargs = named if type(named) is dict else dict(named)
            if check is not None:
                check(name, args, kwargs)
            a, k = encode_args(name, args, kwargs, limit)
            args_of.append(a)
            kwargs_of.append(k)
            if not fixed:
                groups.append(fn.group_of(args, kwargs))
        if not args_of:
            return []
        queue = self.queue
        job_ids = ids.new_many(queue, len(args_of))
        columns = (job_ids, args_of, kwargs_of) if fixed else (job_ids, args_of, kwargs_of, groups)
        refs: list[Any] = [None] * len(job_ids)
        refused: dict[int, Refused] = {}

        # Called while the server runs the next chunk; kept_out: the jobs a quota refused (nothing written).
        def minted(start: int, end: int, now_ms: int, kept_out: dict[int, Refused]) -> None:
            when = _when(now_ms)
            refs[start:end] = [JobRef(job_id, queue, when, True) for job_id in job_ids[start:end]]
            for i in kept_out:
                refs[i] = None
            refused.update(kept_out)

        self.engine.mint_many(self.head, columns, minted)
        if refused:
            raise exceeded(queue, [refused[i] for i in sorted(refused)], [r for r in refs if r is not None])
        return refs


def usable(fn: JobLike) -> Plan | None:
    """fn's plan, unless this call takes the general path: no plan, tracing on (its span, its context),
    or a mint that waits for the transaction (EMQ_ENQUEUE_ON_COMMIT inside ``transaction.atomic()``)."""
    if tracing.on():
        return None
    p = of(fn)
    return None if p is None or (p.on_commit and in_transaction()) else p


def of(fn: JobLike) -> Plan | None:
    """fn's plan under the current settings, or None when its enqueues take the general path."""
    held = fn.__dict__.get(HELD)
    epoch = config.current_epoch()
    if held is None or held[0] != epoch:
        # Kept outside the frozen fields, as functools.cached_property keeps its value: not part of
        # the function's identity, and a copy made by .using() starts without one.
        held = fn.__dict__[HELD] = (epoch, _make(fn))
    return held[1]


def _make(fn: JobLike) -> Plan | None:
    o = fn.options
    queue = fn.queue
    general = (o.after is not None or o.on_commit or o.unique_for is not None or o.debounce is not None
               or config.get("EMQ_EAGER") or config.get("EMQ_DURABLE") or topology.count(queue) != 1 or encrypts(o))
    if general:
        return None
    engine = partition(queue)
    remember_queue(engine)
    shared = MintSpec(id=o.job_id or "", name=fn.name, args_json="", kwargs_json="", group="", due="",
                      if_absent=bool(o.job_id), priority=o.priority or 0, **resolved(fn.name, o))
    group = None if callable(o.group) else fn.group_of((), {})  # a fixed group: worked out once
    head = stored.mint_many_head(shared, group or "")
    on_commit = o.on_commit is None and bool(config.get("EMQ_ENQUEUE_ON_COMMIT"))
    return Plan(queue, engine, shared, stored.mint_filler(shared), group, config.get("EMQ_MAX_PAYLOAD"),
                shape(fn.func, o.takes_context), head, on_commit)


_last: tuple[int, datetime | None] = (0, None)


def _when(ms: int) -> datetime | None:
    """``from_ms``, once per server millisecond: one-by-one enqueues share a millisecond dozens at a time."""
    global _last
    last = _last
    if last[0] != ms:
        last = _last = (ms, from_ms(ms))
    return last[1]
