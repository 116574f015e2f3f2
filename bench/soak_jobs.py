"""The soak's jobs (``bench/soak.py``); its worker processes import this module through EMQ_IMPORTS.

Every body that runs to its end says so as its last step: it appends ``<id> <attempt> <pid> <ms>``
(ms: the wall clock) to one server list (``ENDS``), so the soak counts the jobs whose bodies ran to
the end twice. A body that raises (a failure, a time limit) never gets there.
"""

from __future__ import annotations

import os
import random
import time

import emq
from emq.core import config
from emq.core.connection import get_client

LEASE = 3  # seconds: a killed worker's jobs come back within a lease and a Pump park
ENDS = "soak:ends"  # under EMQ_PREFIX: the bodies that ran to their end


def ends_key() -> str:
    return f"{config.get('EMQ_PREFIX')}:{ENDS}"


def _ended() -> None:
    """The body's last step: note that this attempt ran to its end, in this process."""
    job = emq.current_job()
    get_client().rpush(ends_key(), f"{job.job_id} {job.attempt} {os.getpid()} {int(time.time() * 1000)}")


@emq.job(lease=LEASE)
def plain(ms: int) -> None:
    """A short job (grouped, scheduled and rate-limited ones too, by their options)."""
    time.sleep(ms / 1000)
    _ended()


@emq.job(lease=LEASE, max_attempts=3, backoff=(0.1, 0.5))
def retried(ms: int) -> None:
    """Fails its first attempt, then succeeds."""
    time.sleep(ms / 1000)
    if emq.current_job().attempt < 2:
        raise RuntimeError("the first attempt fails on purpose")
    _ended()


@emq.job(lease=LEASE, max_attempts=2, backoff=(0.1, 0.5))
def failing(ms: int) -> None:
    """Fails every attempt: dead after two."""
    time.sleep(ms / 1000)
    raise RuntimeError("fails on purpose")


@emq.job(lease=LEASE, max_stalled=10)
def long(seconds: float) -> None:
    """Runs for seconds, its lease renewed meanwhile; a killed worker's long job runs again (max_stalled 10)."""
    time.sleep(seconds)
    _ended()


@emq.job(lease=LEASE, timeout=1, max_attempts=1)
def overrun() -> None:
    """Blocked in C past its 1 s limit, returning 2 to 19 s later: dead by JobTimeout at the limit, its
    thread never abandoned (EMQ_TIMEOUT_GRACE, 30 s), where 5 s once made a pool churn (issue #34)."""
    time.sleep(3 + random.random() * 17)
    _ended()  # never reached: the JobTimeout raised at the limit lands as the sleep returns


@emq.job(lease=LEASE, timeout=2, max_attempts=1)
def hung() -> None:
    """Blocked in C for ten minutes: dead by JobTimeout at 2 s, its thread abandoned 30 s later."""
    time.sleep(600)
