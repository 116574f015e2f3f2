"""Demo jobs: what a project's ``<app>/jobs.py`` looks like."""

from __future__ import annotations

import random
import time

import emq


@emq.job
def add(a: int, b: int) -> int:
    """Add two numbers: the smallest job there is."""
    return a + b


@emq.job(max_attempts=4, backoff=(0.5, 5.0))
def flaky_report(n: int) -> dict:
    """Build a pretend report; one in three (n = 0, 3, 6...) fails its first attempt, to show a retry with
    backoff every time the demo runs, not by luck."""
    time.sleep(random.uniform(0.01, 0.2))
    attempt = emq.current_job()  # None when called as a plain function
    if n % 3 == 0 and attempt is not None and attempt.attempt == 1:
        raise RuntimeError(f"report {n}: upstream timed out (retried with backoff)")
    return {"report": n, "rows": random.randint(1, 500)}
