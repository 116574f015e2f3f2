"""Jobs the benchmark runs; its worker processes import this module through EMQ_IMPORTS."""

from __future__ import annotations

import time

import emq


@emq.job
def noop():
    """Nothing: what a drain measures is the queue's own cost per job."""


@emq.job
def stamp(t):
    """Seconds from t (an epoch time: enqueue or due) to the start of this job."""
    return time.time() - t


@emq.job
def mark():
    """When this job started (ns since the epoch), to order a run by start."""
    return time.time_ns()


@emq.job(takes_context=True)
def waits(ctx):
    """A durable job's first run, which ends at once at its wait for a signal (never sent)."""
    ctx.wait_for("go")
