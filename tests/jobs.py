"""Jobs the test suite runs; worker processes import this module through EMQ_IMPORTS."""

from __future__ import annotations

import os
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


@emq.job
def slow_pid(seconds):
    """Its worker's pid, after a pause, so several jobs spread over several processes."""
    time.sleep(seconds)
    return os.getpid()
