"""Jobs that the v0.2.0 wheel and this tree both run (tests/test_upgrade.py), so only 0.2.0's public API.

Every run is written down as it happens (RPUSH of a JSON row to ``RUNS``, a key of the test's own):
which kind of job, its id, which side ran it (UPGRADE_SIDE: "old" or "new") and how it went. The
test counts those rows; it never reads how emq stores a job.
"""

import json
import os
import time

import redis
from django.conf import settings

import emq

RUNS = "upgrade:runs"
SIDE = os.environ.get("UPGRADE_SIDE", "")
_client = None


def note(kind: str, outcome: str, n: int = 0) -> None:
    """Write down this run of the current job."""
    global _client
    if _client is None:
        _client = redis.Redis.from_url(settings.EMQ_URL)
    ctx = emq.current_job()
    row = {"kind": kind, "id": ctx.job_id, "attempt": ctx.attempt, "side": SIDE, "outcome": outcome, "n": n,
           "at": time.time()}
    _client.rpush(RUNS, json.dumps(row))


@emq.job(queue="upg-main")
def plain(kind: str, n: int = 0) -> int:
    """The job of most kinds: it runs and says so."""
    note(kind, "done", n)
    return n + 1


@emq.job(queue="upg-main")
def step(n: int) -> int:
    """A chain's step: given the previous step's result (or its own argument), returns one more."""
    note("chain", "done", n)
    return n + 1


@emq.job(queue="upg-main")
def summary(batch: dict) -> None:
    """A batch's on_complete: its summary comes first."""
    note("batch-callback", "done", batch["completed"])


def _one_second(attempt: int, exc: BaseException) -> float:
    return 1.0  # a fixed delay: the retry is due after the old worker is gone, for the new Pump to promote


@emq.job(queue="upg-fail", backoff=_one_second)
def flaky(kind: str) -> None:
    """Fails on the old side (dead with max_attempts=1, else retried); completes on the new one."""
    if SIDE == "old":
        note(kind, "failed")
        raise RuntimeError(f"{kind} fails on the old side")
    note(kind, "done")


@emq.job(queue="upg-lease", lease=2)
def held(kind: str) -> None:
    """Hangs on the old side until its worker is killed (SIGKILL, mid-lease); completes on the new one."""
    note(kind, "started")
    if SIDE == "old":
        time.sleep(600)
    note(kind, "done")


@emq.job(queue="upg-repeat", every=1)
def tick() -> None:
    """A recurrence, every second: the old Pump mints occurrences, the new one goes on."""
    note("recurring", "done")
