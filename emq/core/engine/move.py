"""Moving jobs to another queue: read each job here, mint it there with the same id, then take it out here.

No script may touch two queues' keys (a cluster puts them on different nodes: DESIGN rule 6), so a move
is three steps, each a round trip for a chunk of ids, in an order that never loses a job:

1. read the jobs here (their state and what a mint needs); a job that is running (active), waiting for
   its parents, or that others wait for (a flow's member) is not moved;
2. mint each in the target with the **same id**, create-if-absent: links, model rows and ``emq.get_job(id)``
   keep finding it (an id stands alone; in a partitioned target it goes to the partition its id's mark or
   its group names). A dead, completed or cancelled job arrives ready with a fresh budget of attempts
   (its original ``max_attempts``), a ready one ready, a scheduled one scheduled at its due time; its name,
   arguments, group, origin, priority, meta and options come along, its history (attempts, errors,
   result) does not;
3. take it out here (``move_out.lua``), only while it is still in the state read in step 1. A job that
   moved on meanwhile (it came due and was claimed) stays here and its copy is taken back out of the
   target ("changed"); if a worker already claimed the copy too, both run ("copied", said, never silent).

Each step is idempotent per id: a move cut short (a crash, a timeout) and run again finds its copy in the
target (same name, arguments and group: "ok") and finishes step 3; an id the target holds for another job
is left alone ("taken").
"""

from __future__ import annotations

from collections.abc import Sequence

from .. import keys, stored, topology
from ..connection import guard
from ..records import MintSpec
from .base import MAX_BATCH
from .queue import Queue

MOVABLE = ("scheduled", "ready", "completed", "dead", "cancelled")
READ = ("state", "fn", "args", "kwargs", "group", "due", "max_attempts", "budget", "lease", "max_stalled", "backoff",
        "origin", "priority", "meta", "timeout", "notify")
SAME = ("fn", "args", "kwargs", "group")  # a copy already in the target is this job's when these agree


def move(source: Queue, ids: Sequence[str], target: str) -> list[str]:
    """Move jobs of one physical queue to the logical queue target, MAX_BATCH a round trip a step; per id
    "ok", "missing", the state of a job that cannot move, "in a flow", "taken", "changed" or "copied"."""
    if topology.logical(source.name) == topology.logical(target):
        raise ValueError(f"cannot move jobs of queue {source.name!r} to {target!r}: it is the same queue")
    out: list[str] = []
    for start in range(0, len(ids), MAX_BATCH):
        out += _move_chunk(source, list(ids[start : start + MAX_BATCH]), target)
    return out


def _move_chunk(source: Queue, ids: list[str], target: str) -> list[str]:
    with guard():
        jobs = stored.read(source.client, [source.keys.job(i) for i in ids], READ)
    status = {i: _refusal(f) for i, f in zip(ids, jobs, strict=True)}
    specs = {i: _spec(i, f) for i, f in zip(ids, jobs, strict=True) if status[i] is None}
    minted = _mint(source, specs, target)
    status.update({i: "taken" for i, (_, ok) in minted.items() if not ok})
    go = [i for i in specs if status[i] is None]
    read = {i: f["state"] for i, f in zip(ids, jobs, strict=True)}
    answers = source._run("move_out", [x for i in go for x in (i, read[i])]) if go else []
    undo = []
    for i, answer in zip(go, answers, strict=True):
        status[i] = "ok" if answer == "ok" else "changed"
        if answer != "ok" and minted[i][1] == "new":
            undo.append(i)
    for i in _undo(undo, specs, minted):
        status[i] = "copied"
    return [status[i] or "ok" for i in ids]


def _refusal(f: dict[str, str | None]) -> str | None:
    """Why a job cannot move (None: it can)."""
    if f["state"] is None:
        return "missing"
    if f["state"] not in MOVABLE:
        return f["state"]
    return "in a flow" if f["notify"] else None


def _spec(job_id: str, f: dict[str, str | None]) -> MintSpec:
    """The target's mint of a job read here (``READ``, its defaults filled)."""
    base, cap = (float(x) for x in (f["backoff"] or "1,300").split(","))
    limit, soft = (int(float(x)) for x in (f["timeout"] or "0,0").split(","))
    due = f"@{f['due']}" if f["state"] == "scheduled" and f["due"] else ""
    return MintSpec(job_id, f["fn"] or "", f["args"] or "[]", f["kwargs"] or "{}", f["group"] or keys.DEFAULT_GROUP,
                    due, int(f["budget"] or f["max_attempts"] or 3), int(f["lease"] or 0), int(f["max_stalled"] or 1),
                    (base, cap), if_absent=True, origin=f["origin"] or "", priority=int(f["priority"] or 0),
                    meta=f["meta"] or "", timeout_ms=limit, soft_timeout_ms=soft)


def _home(target: str, spec: MintSpec) -> str:
    """The physical queue of target a job goes to: the partition its id's mark names, else its route."""
    return topology.marked(target, spec.id) or next(iter(topology.route(target, [spec])[1]))


def _mint(source: Queue, specs: dict[str, MintSpec], target: str) -> dict[str, tuple[Queue, str | bool]]:
    """Mint each in its target queue: per id (that queue, "new" | "same" (an earlier move's copy) | False)."""
    by_queue: dict[str, list[MintSpec]] = {}
    for spec in specs.values():
        by_queue.setdefault(_home(target, spec), []).append(spec)
    out: dict[str, tuple[Queue, str | bool]] = {}
    for name, batch in by_queue.items():
        q = _queue(source, name)
        made = q.mint(batch)
        with guard():
            there = stored.read(q.client, [q.keys.job(s.id) for s in batch], SAME)
            q.client.sadd(keys.registry_queues(q.keys.prefix), topology.logical(name))
        for spec, new, f in zip(batch, made, there, strict=True):
            mine = (f["fn"], f["args"], f["kwargs"], f["group"]) == (spec.name, spec.args_json, spec.kwargs_json,
                                                                      spec.group)
            out[spec.id] = (q, "new" if new else ("same" if mine else False))
    return out


def _undo(ids: list[str], specs: dict[str, MintSpec], minted: dict[str, tuple[Queue, str | bool]]) -> list[str]:
    """Take back the copies of jobs that stayed here; the ids whose copy a worker had claimed already."""
    failed = []
    for i in ids:
        q = minted[i][0]
        state = "scheduled" if specs[i].due else "ready"
        if q._run("move_out", [i, state]) != ["ok"]:
            failed.append(i)
    return failed


def _queue(source: Queue, name: str) -> Queue:
    return Queue(name, prefix=source.keys.prefix, client=source._client)
