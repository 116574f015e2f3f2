"""Durable jobs the suite runs (tests/test_steps.py, test_signals.py, test_spawn.py); worker processes
import this module through EMQ_IMPORTS. Each step notes its run in a file, so a test sees every run
of it, in any process."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import emq

GATES: dict[str, threading.Event] = {}  # in-process tests hold a job between two calls with these


def note(path: str, text: str) -> str:
    """Append a line to a file; returns the text (a step's result)."""
    with open(path, "a") as f:
        f.write(text + "\n")
    return text


def lines(path: str | Path) -> list[str]:
    p = Path(path)
    return p.read_text().split() if p.exists() else []


def _die_once(path: str, marker: str) -> str:
    """Note the run; SIGKILL this process the first time (the marker file says a run died already)."""
    note(path, "three")
    if not os.path.exists(marker):
        Path(marker).write_text(str(os.getpid()))
        os.kill(os.getpid(), signal.SIGKILL)
    return "three"


@emq.job(takes_context=True, lease=1, max_attempts=2)
def three_steps(ctx, path, marker):
    """Three steps; the worker that runs the third the first time is killed (kill -9) inside it."""
    one = ctx.step("one", note, path, "one")
    two = ctx.step("two", note, path, "two")
    three = ctx.step("three", _die_once, path, marker)
    return [one, two, three]


@emq.job(takes_context=True, max_attempts=1)
def sleeper(ctx, path, seconds):
    """A step, a sleep, then a note once awake."""
    ctx.step("before", note, path, "before")
    ctx.sleep(seconds)
    note(path, "after")
    return "awake"


@emq.job(takes_context=True, max_attempts=1)
def naps_then_waits(ctx, path):
    """Sleeps three times (a step between each), then waits for signal "go": one attempt in all."""
    for i in range(3):
        ctx.step(f"nap-{i}", note, path, f"nap-{i}")
        ctx.sleep(0.05)
    got = ctx.wait_for("go")
    note(path, "done")
    return {"go": got}


@emq.job(takes_context=True)
def waits(ctx, name, timeout=None):
    """Waits for a signal; returns its payload (None on timeout) and the wall time the wait returned."""
    ctx.step("started", time.time)
    got = ctx.wait_for(name, timeout=timeout)
    return {"got": got, "at": time.time(), "started": ctx.step("seen", time.time)}


@emq.job(takes_context=True)
def gated_wait(ctx, gate, name):
    """Reads its journal (a step), holds at a gate the test opens, then waits for a signal."""
    ctx.step("first", lambda: "first")
    GATES[gate].wait(10)
    return ctx.wait_for(name)


@emq.job(takes_context=True, max_attempts=3, backoff=(0.01, 0.01))
def flaky_steps(ctx, path):
    """Step one, then step two fails once (a file marks it), then completes: step one runs once."""
    ctx.step("one", note, path, "one")

    def two():
        note(path, "two")
        if lines(path).count("two") == 1:
            raise RuntimeError("step two fails the first time")
        return 2

    return ctx.step("two", two)


@emq.job(takes_context=True)
def twice(ctx):
    """Uses one step name twice in a run: an error."""
    ctx.step("same", lambda: 1)
    ctx.step("same", lambda: 2)


@emq.job
def child(n):
    return n * 10


@emq.job(max_attempts=1)
def failing_child(n):
    raise ValueError(f"child {n} fails")


@emq.job(takes_context=True, max_attempts=1)
def parent(ctx, path, n, queue=None):
    """Spawns n children (in queue, when given), waits for them, returns their results."""
    fn = child.using(queue=queue) if queue else child
    refs = [ctx.spawn(fn, i) for i in range(n)]
    note(path, "spawned")
    results = ctx.wait_children()
    note(path, "joined")
    return {"results": results, "ids": [r.id for r in refs]}


@emq.job(takes_context=True, max_attempts=1)
def parent_of_failure(ctx):
    ctx.spawn(child, 1)
    ctx.spawn(failing_child.s(2))
    try:
        return ctx.wait_children()
    except emq.ChildFailed as exc:
        return {"failed": [c[0] for c in exc.children], "message": str(exc)}


@emq.job(takes_context=True)
def waits_only(ctx):
    """Waits for signal "go" at once: a run, then nothing until the signal."""
    return ctx.wait_for("go")


@emq.job(takes_context=True, timeout=1, max_attempts=1)
def longer_than_its_limit(ctx, path):
    """Two runs of 0.6 s with a sleep between: 1.2 s in all, each run under its 1 s time limit."""
    ctx.step("first", lambda: time.sleep(0.6) or note(path, "first"))
    ctx.sleep(0.05)
    ctx.step("second", lambda: time.sleep(0.6) or note(path, "second"))
    return "done"


@emq.job(takes_context=True)
async def async_steps(ctx, path):
    """An async job: a coroutine step, a sleep, a plain step."""

    async def fetch():
        note(path, "fetch")
        return 1

    first = await ctx.step_async("fetch", fetch)
    ctx.sleep(0.05)
    return first + await ctx.step_async("plain", lambda: 2)


@emq.job(takes_context=True, max_attempts=1)
def sleeps_in_a_step(ctx):
    """A durable call inside a step's fn: an error."""
    ctx.step("outer", lambda: ctx.sleep(1))


@emq.job(takes_context=True, max_attempts=1)
def huge_step(ctx):
    ctx.step("big", lambda: "x" * 2048)


@emq.job(takes_context=True)
def waits_briefly(ctx):
    """Its first durable call is a wait with a timeout: the wait's deadline is all its journal holds."""
    return ctx.wait_for("go", timeout=0.05)
