"""Jobs the test suite runs; worker processes import this module through EMQ_IMPORTS."""

from __future__ import annotations

import os
import signal
import time

import emq


@emq.job
def add(a, b):
    return a + b


@emq.job(max_attempts=2, backoff=(0.01, 0.02))
def fail_if_odd(n):
    """Fails for odd n, so a drain ends with some jobs completed and some dead."""
    if n % 2:
        raise ValueError(f"odd {n}")
    return n


@emq.job(max_attempts=3, backoff=(0.2, 0.4))
def always_fails(reason="boom"):
    raise RuntimeError(reason)


@emq.job
def sleep_for(seconds):
    time.sleep(seconds)
    return seconds


@emq.job
def touch(path, text="x"):
    """Append a line to a file, so a test sees each run of a job, in any process."""
    with open(path, "a") as f:
        f.write(f"{text}\n")
    return text


@emq.job
def pid():
    return os.getpid()


# -- leases (tests/test_leases.py) ------------------------------------------------------------


def _note(path, line):
    with open(path, "a") as f:
        f.write(f"{line}\n")


@emq.job(takes_context=True)
def hold_first(ctx, path, tag, seconds=60.0):
    """The first attempt holds its lease for seconds (its worker is killed or frozen meanwhile)."""
    if ctx.attempt == 1:
        time.sleep(seconds)
    _note(path, f"{tag} {ctx.attempt} {os.getpid()}")
    return {"attempt": ctx.attempt, "pid": os.getpid()}


@emq.job(takes_context=True, lease=1)
def renews_itself(ctx, seconds):
    """Run past its own lease, renewing it through the context a few times a lease."""
    end = time.monotonic() + seconds
    renewed = 0
    while time.monotonic() < end:
        time.sleep(ctx.lease_ms / 4000)
        if not ctx.extend_lock():
            raise RuntimeError(f"lease of job {ctx.job_id} lost at attempt {ctx.attempt}")
        renewed += 1
    return {"attempt": ctx.attempt, "token": ctx.token, "renewed": renewed}


@emq.job(takes_context=True, lease=1)
def kill_my_worker(ctx, path):
    """Note the start, then SIGKILL the worker process running it: a job that always stalls."""
    _note(path, f"{ctx.attempt} {os.getpid()}")
    os.kill(os.getpid(), signal.SIGKILL)


@emq.job
def started_at():
    """The wall-clock time the job started, for enqueue-to-start latency."""
    return time.time()


@emq.job
def nap(seconds):
    """Sleep, then report the process that ran the job."""
    time.sleep(seconds)
    return os.getpid()


# -- lanes (tests/test_lanes.py) --------------------------------------------------------------


@emq.job
def count_active(key, seconds):
    """Count jobs of this kind running at once in a server counter; keep every value it reached."""
    from emq.connection import get_client

    client = get_client()
    client.rpush(f"{key}:seen", client.incr(key))
    time.sleep(seconds)
    client.decr(key)


@emq.job(group=lambda tenant, n: f"tenant-{tenant}")
def for_tenant(tenant, n):
    return n


@emq.job
def slow_pid(seconds):
    """Its worker's pid, after a pause, so several jobs spread over several processes."""
    time.sleep(seconds)
    return os.getpid()
