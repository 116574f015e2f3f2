"""Chains and batches (Celery's canvas, Sidekiq's batches) over jobs that wait for other jobs.

``job.s(...)`` is a *signature*: a job, its ``.using()`` options and its arguments. ``chain(a, b,
c)`` runs each step once the previous completed, its result first among the step's arguments
(``.si()``: none); a step that did not complete makes every later one dead with the reason
``chain step <id> <state>``. ``batch([...], on_complete=, on_success=, on_failure=)`` runs its
members side by side; a count on the batch's record, decremented by each member's end, makes
the last one settle the batch, and its callbacks (jobs waiting for it) get the summary
``{"id", "total", "completed", "dead", "cancelled"}`` first: on_complete always, on_success when
every member completed (dead otherwise), on_failure when one did not (cancelled otherwise).
``chord([...], callback)`` is a batch whose one callback gets the list of the members' results, in
member order (Celery's chord; ``_chord.lua``). ``BatchRef.cancel()`` and ``cancel_flow`` cancel
what has not finished of a flow (``emq.core.flowcancel``); ``emq.retry`` of a failed member or step
resumes it (``_revive.lua``).
"""

from __future__ import annotations

import dataclasses
import json
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ..core import config, flowcancel, topology, waits
from ..core.graph import FlowItem, Parent
from ..core.logical import JobRef, partition
from . import eager
from .dependent import parents_of, placed, submit, when_of
from .kind import JobLike
from .options import encrypts, waits_for_commit

CALLBACKS = {"on_complete": "finished", "on_success": "completed", "on_failure": "failed",  # name -> when
             "callback": "completed"}  # a chord's


@dataclass(frozen=True)
class Signature:
    """A job with its arguments and options: a chain's step, a batch's member or callback."""

    fn: JobLike
    args: tuple = ()
    kwargs: dict = field(default_factory=dict, hash=False)
    takes_result: bool = True  # .s(): the previous step's result (a batch's summary) comes first; .si(): not

    def using(self, **options: Any) -> Signature:
        """The same signature with some of the job's options changed (``JobFunction.using``)."""
        return dataclasses.replace(self, fn=self.fn.using(**options))

    def enqueue(self) -> JobRef:
        """Mint this one job on its own, now."""
        return self.fn.enqueue(*self.args, **self.kwargs)


@dataclass(frozen=True)
class BatchRef:
    """A minted batch: ``members`` and ``callbacks`` are JobRefs, ``home`` the partition of its record."""

    id: str
    queue: str
    home: str
    members: tuple[JobRef, ...] = field(compare=False, repr=False)
    callbacks: dict[str, JobRef] = field(default_factory=dict, compare=False)

    @property
    def callback(self) -> JobRef | None:
        """The callback (on_complete, else on_success, else on_failure); None for a batch without one."""
        return next(iter(self.callbacks.values()), None)

    def get(self) -> dict[str, Any]:
        """Where the batch is: state (waiting, completed, failed), total, completed, dead, cancelled."""
        r = partition(self.home).flow.record(self.id)
        return {"id": self.id, "state": r.get("state", "expired"), "total": int(r.get("total", len(self.members))),
                **{k: int(r.get(k, 0)) for k in ("completed", "dead", "cancelled")}}

    def wait(self, timeout: float | None = None) -> dict[str, Any]:
        """Block until every member has ended; the batch's summary (see ``get``). TimeoutError past timeout."""
        waits.wait_state(partition(self.home), self.id, timeout)
        return self.get()

    def cancel(self) -> int:
        """Cancel every member that has not finished, and the callbacks; returns how many jobs were cancelled."""
        return flowcancel.cancel(partition(self.home), self.id)


def _checked(name: str, sig: Any) -> Signature:
    if not isinstance(sig, Signature):
        raise TypeError(f"{name} takes signatures, job.s(...) or job.si(...), not {sig!r}")
    return sig


def chain(*steps: Signature) -> JobRef:
    """Run steps one after another, each given the previous result first; returns the last step's JobRef."""
    if not steps:
        raise ValueError("emq.chain needs at least one step: emq.chain(a.s(1), b.s(), ...)")
    steps = tuple(_checked("emq.chain", s) for s in steps)
    if config.get("EMQ_EAGER"):
        return _chain_inline(steps)
    cid, items, prev, sealing = f"chain-{uuid.uuid4().hex}", [], None, False
    for sig in steps:
        passes = prev is not None and sig.takes_result
        sig = _sealing(sig, sealing)  # False before the first step
        sealing = encrypts(sig.fn.options)
        spec = sig.fn.spec(sig.args, sig.kwargs, "", prepended=passes)
        ((spec, queue),) = placed(sig.fn, [spec])
        parents = parents_of(sig.fn.options.after or (), sig.fn.queue) + ((prev,) if prev else ())
        items.append(FlowItem(spec, queue, parents, "chain step", when_of(sig.fn), passes))
        prev = Parent(queue, spec.id)
    home = items[0].queue
    items = [dataclasses.replace(i, flow=(home, cid)) for i in items]
    record = _record(home, cid, "chain", items, {})
    deferred = any(waits_for_commit(s.fn.options.on_commit) for s in steps)
    return submit(items, deferred, [(steps[-1].fn.queue, items[-1].spec.id)], record)[0]


def batch(members: Iterable[Signature], *, on_complete: Signature | None = None, on_success: Signature | None = None,
          on_failure: Signature | None = None) -> BatchRef:
    """Run members side by side; once every one has ended, its callbacks get the batch's summary first."""
    sigs = [_checked("emq.batch", m) for m in members]
    if not sigs:
        raise ValueError("emq.batch needs at least one member: emq.batch([job.s(1), job.s(2)], on_complete=...)")
    given = {k: _checked(k, v) for k, v in
             (("on_complete", on_complete), ("on_success", on_success), ("on_failure", on_failure)) if v is not None}
    if config.get("EMQ_EAGER"):
        return _batch_inline(sigs, given)
    return _fan_in("batch", sigs, given)


def chord(members: Iterable[Signature], callback: Signature) -> BatchRef:
    """Run members side by side; once every one completed, callback gets the list of their results first.

    The results come in member order. A member that did not complete makes the callback dead with the
    reason ``chord <id> failed: member <member id> <state>``; ``emq.retry`` of that member resumes the
    chord. The list may take EMQ_MAX_PAYLOAD bytes at most: past it, the callback ends dead too.
    """
    sigs = [_checked("emq.chord", m) for m in members]
    if not sigs:
        raise ValueError("emq.chord needs at least one member: emq.chord([job.s(1), job.s(2)], callback.s())")
    callback = _sealing(_checked("emq.chord's callback", callback), any(encrypts(m.fn.options) for m in sigs))
    given = {"callback": callback}
    if config.get("EMQ_EAGER"):
        return _chord_inline(sigs, given["callback"])
    return _fan_in("chord", sigs, given)


def _sealing(sig: Signature, fed_encrypted: bool) -> Signature:
    """A step given encrypted results (a chain's next step, a chord's callback) is encrypted too, whatever its
    own option says: a result encrypted at rest stays so downstream."""
    if fed_encrypted and sig.takes_result and not encrypts(sig.fn.options):
        return sig.using(encrypt=True)
    return sig


def cancel_flow(flow_id: str, queue: str | None = None) -> int:
    """Cancel what has not finished of a batch, chord or chain (its record in queue: default EMQ_DEFAULT_QUEUE),
    callbacks included; returns how many jobs were cancelled. A chain's id is ``job.flow[1]`` of any step."""
    name = queue or config.get("EMQ_DEFAULT_QUEUE")
    return flowcancel.cancel(flowcancel.home_of(name, flow_id, config.get("EMQ_PREFIX")), flow_id)


def _fan_in(kind: str, sigs: list[Signature], given: dict[str, Signature]) -> BatchRef:
    """Mint a batch or a chord: its record, callbacks (waiting for it), then members, home queue first."""
    bid = f"{kind}-{uuid.uuid4().hex}"
    logical = next(iter(given.values()), sigs[0]).fn.queue
    home = topology.home(logical)
    callbacks = {k: _callback(sig, k, home, bid, kind) for k, sig in given.items()}
    items = _members(sigs, home, bid, kind == "chord")
    record = _record(home, bid, kind, items, {k: [i.queue, i.spec.id] for k, i in callbacks.items()})
    deferred = any(waits_for_commit(s.fn.options.on_commit) for s in [*sigs, *given.values()])
    ordered = sorted(items, key=lambda i: (i.queue != home, i.queue))  # one run of calls per queue, home first
    refs = [(topology.logical(i.queue), i.spec.id) for i in [*callbacks.values(), *items]]
    jobs = submit([*callbacks.values(), *ordered], deferred, refs, record)
    n = len(callbacks)
    return BatchRef(bid, logical, home, tuple(jobs[n:]), dict(zip(callbacks, jobs[:n], strict=True)))


def _callback(sig: Signature, name: str, home: str, bid: str, kind: str) -> FlowItem:
    spec = sig.fn.spec(sig.args, sig.kwargs, "", prepended=sig.takes_result)
    ((spec, queue),) = placed(sig.fn, [spec])
    return FlowItem(spec, queue, (Parent(home, bid),), kind, CALLBACKS[name], sig.takes_result, (home, bid))


def _members(sigs: list[Signature], home: str, bid: str, chord: bool) -> list[FlowItem]:
    """The members' items in the order given; settings read and routes taken once per job function."""
    by_fn: dict[int, list[int]] = {}
    for i, sig in enumerate(sigs):
        by_fn.setdefault(id(sig.fn), []).append(i)
    out: list[FlowItem | None] = [None] * len(sigs)
    for idx in by_fn.values():
        fn = sigs[idx[0]].fn
        options, parents, when = fn._resolved(), parents_of(fn.options.after or (), fn.queue), when_of(fn)
        specs = [fn.spec(sigs[i].args, sigs[i].kwargs, "", resolved=options) for i in idx]
        for i, (spec, queue) in zip(idx, placed(fn, specs), strict=True):
            out[i] = FlowItem(spec, queue, parents, "parent", when, flow=(home, bid), member=True, chord=chord)
    return out


def _record(home: str, flow_id: str, kind: str, items: list[FlowItem], callbacks: dict) -> Any:
    """What opens the flow's record in its home queue before its jobs are minted."""
    ttl_ms = int(config.get("EMQ_RESULT_TTL") * 1000)
    refs = [(i.ref(), i.spec.id) for i in items if i.member or kind == "chain"]
    limit = config.get("EMQ_MAX_PAYLOAD") if kind == "chord" else 0
    return lambda: partition(home).flow.open(flow_id, kind, len(refs), ttl_ms, json.dumps(callbacks), refs, limit)


def _chain_inline(steps: tuple[Signature, ...]) -> JobRef:
    """EMQ_EAGER: each step runs now, in order, given the previous result."""
    result, ref = None, None
    for i, sig in enumerate(steps):
        args = (result, *sig.args) if i and sig.takes_result else sig.args
        spec = sig.fn.spec(args, sig.kwargs, "")
        result = eager.run_inline(sig.fn, spec)
        ref = JobRef(spec.id, sig.fn.queue)
    return ref


def _batch_inline(sigs: list[Signature], given: dict[str, Signature]) -> BatchRef:
    """EMQ_EAGER: members run now (a failure is raised), then on_complete and on_success."""
    bid = f"batch-{uuid.uuid4().hex}"
    members = []
    for s in sigs:
        spec = s.fn.spec(s.args, s.kwargs, "")
        eager.run_inline(s.fn, spec)
        members.append(JobRef(spec.id, s.fn.queue))
    summary = {"id": bid, "total": len(sigs), "completed": len(sigs), "dead": 0, "cancelled": 0}
    refs = {}
    for name in ("on_complete", "on_success"):
        if name in given:
            sig = given[name]
            spec = sig.fn.spec((summary, *sig.args) if sig.takes_result else sig.args, sig.kwargs, "")
            eager.run_inline(sig.fn, spec)
            refs[name] = JobRef(spec.id, sig.fn.queue)
    home = topology.home(sigs[0].fn.queue)
    return BatchRef(bid, sigs[0].fn.queue, home, tuple(members), refs)


def _chord_inline(sigs: list[Signature], callback: Signature) -> BatchRef:
    """EMQ_EAGER: members run now (a failure is raised), then the callback with their results."""
    results, members = [], []
    for s in sigs:
        spec = s.fn.spec(s.args, s.kwargs, "")
        results.append(eager.run_inline(s.fn, spec))
        members.append(JobRef(spec.id, s.fn.queue))
    spec = callback.fn.spec((results, *callback.args) if callback.takes_result else callback.args, callback.kwargs, "")
    eager.run_inline(callback.fn, spec)
    home = topology.home(callback.fn.queue)
    return BatchRef(f"chord-{uuid.uuid4().hex}", callback.fn.queue, home, tuple(members),
                    {"callback": JobRef(spec.id, callback.fn.queue)})
