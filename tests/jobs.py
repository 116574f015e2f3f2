"""Jobs the test suite runs; worker processes import this module through EMQ_IMPORTS."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
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
    _note(path, text)
    return text


@emq.job
def pid():
    return os.getpid()


# -- leases (tests/test_leases.py) ------------------------------------------------------------


@emq.job
def frozen():
    """Objects the worker's process froze out of the cyclic GC's reach at start-up (startup.freeze_heap)."""
    import gc

    return gc.get_freeze_count()


def _note(path, line):
    """Append a line with one write on a bare descriptor. A cancel is raised into the job's thread at any
    bytecode; with open() it could land between the open and the with, leaving a file object to a
    ResourceWarning that pytest turns into a failure. A bare descriptor has no object to warn about."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, f"{line}\n".encode())
    finally:
        os.close(fd)


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
    from emq.core.connection import get_client

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


@emq.job
def login(user, password, api_token=None):
    """A job whose arguments hold secrets (the dashboard must mask them)."""
    return {"user": user}


# -- operations (tests/test_observe.py) -------------------------------------------------------


@emq.job(max_attempts=1)
def logs_x(fail=False):
    """Log "x" through the job's own logger; fail after it when asked."""
    import logging

    logging.getLogger("tests.jobs").info("x")
    if fail:
        raise ValueError("failed on purpose")
    return "logged"
# -- every job ends (tests/test_limits.py, test_policy.py, test_cancel.py) --------------------


@emq.job(timeout=1, max_attempts=2, backoff=(0, 0))
def sleep_forever():
    """Blocked in C for an hour: only the time limit ends it."""
    time.sleep(3600)


@emq.job(timeout=1, max_attempts=2, backoff=(0, 0))
async def await_forever():
    await asyncio.sleep(3600)


@emq.job(timeout=1, max_attempts=1)
def spin_forever(path):
    """Busy in Python: the JobTimeout raised inside it ends it; it notes that it saw it."""
    try:
        while True:
            pass
    except emq.JobTimeout as exc:
        _note(path, f"saw {type(exc).__name__}")
        raise


@emq.job(timeout=5, soft_timeout=0.3, max_attempts=1)
def cleans_up(path):
    """Works in short steps, catches the soft limit, cleans up and returns in time."""
    try:
        for _ in range(300):
            time.sleep(0.01)  # a call blocked in C sees the exception only when it returns
    except emq.SoftTimeLimit:
        _note(path, "soft limit")
        return "cleaned up"
    return "slept"


@emq.job(timeout=5, soft_timeout=0.3, max_attempts=1)
async def cleans_up_async(path):
    try:
        await asyncio.sleep(3)
    except emq.SoftTimeLimit:
        _note(path, "soft limit")
        return "cleaned up"
    return "slept"


@emq.job(max_attempts=3, backoff=(0, 0))
def exits(code):
    sys.exit(code)


@emq.job(max_attempts=3, backoff=(0, 0))
async def exits_async(code):
    sys.exit(code)


@emq.job(retry_on=(OSError,), max_attempts=4, backoff=(0, 0))
def raises(kind, message="x"):
    raise {"value": ValueError, "os": OSError, "timeout": emq.JobTimeout}[kind](message)


@emq.job(max_attempts=5)
def discards(reason):
    raise emq.Discard(reason)


@emq.job(max_attempts=2)
def retries_in(delay):
    raise emq.Retry(delay=delay)


def _until_third(attempt, exc):
    """Seconds before the next try: 0.01 x attempt for the first two, then no more retries."""
    return None if attempt >= 3 else 0.01 * attempt


@emq.job(max_attempts=10, backoff=_until_third)
def backs_off(path):
    _note(path, "attempt")
    raise RuntimeError("again")


@emq.job(takes_context=True, lease=1)
def until_cancelled(ctx, path):
    """Note the start, then wait until cancelled; note what the code saw. The start's note is inside
    the try: a cancel heard as soon as the note is readable may arrive before the note's call returns."""
    try:
        _note(path, f"started {ctx.attempt}")
        while True:
            time.sleep(0.02)
    except emq.Cancelled:
        _note(path, f"Cancelled cancelled={ctx.cancelled}")
        raise


@emq.job(takes_context=True, lease=1)
async def until_cancelled_async(ctx, path):
    _note(path, f"started {ctx.attempt}")
    try:
        await asyncio.sleep(3600)
    except emq.Cancelled:
        _note(path, f"Cancelled cancelled={ctx.cancelled}")
        raise


@emq.job(max_attempts=1)
def busy(seconds):
    """Busy in Python code for seconds (a time limit reaches it at once)."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass
    return seconds


# -- workflows and live state (tests/test_flows.py, tests/test_live.py) -----------------------


def _server():
    from emq.core.connection import get_client

    return get_client()


@emq.job
def plus_one(n):
    return n + 1


@emq.job
def double(n):
    return n * 2


@emq.job(max_attempts=1)
def explode(*args):
    raise ValueError(f"boom {args}")


@emq.job
def noop(*args, **kwargs):
    return None


@emq.job
def counted(key, seconds=0.0):
    """Sleep, then count this run in a server counter (a test sees every run, in any process)."""
    time.sleep(seconds)
    return _server().incr(key)


@emq.job
def keep_summary(summary, key):
    """A batch callback: count the call and keep the summary it got."""
    import json

    client = _server()
    client.rpush(key, json.dumps(summary))
    return summary


def _rounds(ctx, start, count, n, report):
    total = 0
    for i in range(start, start + count):
        for j in range(300):
            total += j * i
        if report:
            ctx.progress(i / n, "working")
    return total


@emq.job(takes_context=True)
def crunch(ctx, n, blocks=20):
    """n rounds of a little arithmetic without progress and n rounds reporting it each round,
    interleaved in blocks so that both see the same machine; returns (plain s, reporting s)."""
    plain = reporting = 0.0
    size = n // blocks
    for b in range(blocks):
        for report in (False, True):
            started = time.perf_counter()
            _rounds(ctx, b * size, size, n, report)
            spent = time.perf_counter() - started
            if report:
                reporting += spent
            else:
                plain += spent
    return plain, reporting


@emq.job
def reports_via_current(path_key, seconds):
    """Report progress through emq.current_job(), then hold on so a test can read it."""
    emq.current_job().progress(0.5, "half")
    _server().set(path_key, "reported")
    time.sleep(seconds)
    emq.current_job().progress(0.75, "three quarters")
    _server().set(path_key, "reported again")
    time.sleep(seconds)
    return "done"


@emq.job
def reports_to_the_end(steps, pause=0.2):
    """Report the first of steps, wait pause s (the worker writes it), report the rest in a row and
    return at once: the last report comes within a second of the write, and must reach the job."""
    emq.current_job().progress(1 / steps, f"step 1 of {steps}")
    time.sleep(pause)
    for i in range(2, steps + 1):
        emq.current_job().progress(i / steps, f"step {i} of {steps}")
    return steps


@emq.job
async def reports_to_the_end_async(steps, pause=0.2):
    """reports_to_the_end as an async def job (run on the worker's event loop)."""
    emq.current_job().progress(1 / steps, f"step 1 of {steps}")
    await asyncio.sleep(pause)
    for i in range(2, steps + 1):
        emq.current_job().progress(i / steps, f"step {i} of {steps}")
    return steps


@emq.job
def rate_limited_once(path, retry_in=2.0):
    """Raise emq.RateLimited the first time (no file at path yet), then complete."""
    if not os.path.exists(path):
        with open(path, "w") as f:
            f.write("429\n")
        raise emq.RateLimited(retry_in=retry_in)
    return "ok"


# -- faults (tests/test_faults_server.py) -----------------------------------------------------


@emq.job(lease=5, max_attempts=3)
def ran_through(path, tag, seconds):
    """Note each start of the job (to count runs), sleep through a server outage, return its tag."""
    _note(path, f"{tag} {os.getpid()}")
    time.sleep(seconds)
    return tag


# -- flows that are repaired, fan in and are cancelled (tests/test_flow_repair.py, test_chords.py) ---


@emq.job(max_attempts=1)
def broken_until_fixed(n, key):
    """A step that fails until the test fixes its cause (sets key); every run counted in <key>:runs."""
    client = _server()
    client.incr(f"{key}:runs")
    if not client.exists(key):
        raise RuntimeError("the cause is not fixed yet")
    return n * 10


@emq.job
def runs_counted(n, key):
    """Count this run in a server counter and pass n on."""
    _server().incr(key)
    return n


@emq.job
def keep_results(results, key):
    """A chord's callback: keep the results it got (JSON) and count the call."""
    import json

    _server().rpush(key, json.dumps(results))
    return len(results)


@emq.job
def text_of(n, size):
    return f"{n:0{size}d}"


@emq.job(takes_context=True, lease=30)
def hold_until_cancelled(ctx, key):
    """Note the start in <key>:started, run until cancelled, then note when (time.time) in <key>:seen."""
    client = _server()
    client.set(f"{key}:started", time.time())
    try:
        while True:
            time.sleep(0.001)
    except emq.Cancelled:
        client.set(f"{key}:seen", time.time())
        raise


@emq.job(max_attempts=3)
def attempt_after_a_hold(path):
    """Raise emq.RateLimited the first time (no file at path yet), then return the attempt it runs as."""
    if not os.path.exists(path):
        with open(path, "w") as f:
            f.write("429\n")
        raise emq.RateLimited(retry_in=0.05)
    return emq.current_job().attempt


# -- server stalls (tests/test_faults_stall.py) -------------------------------------------------


@emq.job(lease=3, max_attempts=5)
def outlives_a_stall(path, tag, seconds):
    """Note each start and each run to the end; sleep in short steps, so a lost lease can stop it."""
    from emq.errors import LeaseExpired

    _note(path, f"{tag} start {os.getpid()}")
    deadline = time.monotonic() + seconds
    try:
        while time.monotonic() < deadline:
            time.sleep(0.05)
    except LeaseExpired:
        _note(path, f"{tag} stopped")
        raise
    _note(path, f"{tag} end")
    return tag


# -- a worker stuck past its grace (tests/test_supervisor.py) ------------------------------------


@emq.job
def holds_the_log(seconds):
    """Takes the lock of every logging handler and keeps it: the worker's next log line (its stop's
    "stopping: waiting…") blocks its main thread, as a job holding a lock the worker needs would."""
    import logging

    for handler in {*logging.getLogger().handlers, *logging.getLogger("emq").handlers}:
        handler.acquire()
    time.sleep(seconds)
