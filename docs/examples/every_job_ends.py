"""Every job ends: time limits, the retry policy, cancel and pause (run by tests/test_docs_examples.py).

The jobs carry the limits a real project would give them; the examples below shorten them per
call with ``.using(...)`` so that the tests run in seconds.
"""

import asyncio
import sys
import threading
import time
from datetime import UTC, datetime, timedelta

import emq
from emq.testing import run_until_empty


# --8<-- [start:limits]
@emq.job(timeout=300, soft_timeout=240)
def export_report(report_id: int) -> str:
    written = 0
    try:
        for _chunk in range(1000):
            time.sleep(0.05)  # stands in for writing one chunk of the report
            written += 1
    except emq.SoftTimeLimit:  # raised inside the job at soft_timeout: 60 s left to stop cleanly
        return f"report {report_id}: partial, {written} chunks"
    return f"report {report_id}: complete"
# --8<-- [end:limits]


# --8<-- [start:blocked]
@emq.job(timeout=600, max_attempts=2, backoff=(0.0, 0.0))
def wait_for_upstream(seconds: float) -> None:
    time.sleep(seconds)  # blocked in C: the slot is free at the deadline all the same
# --8<-- [end:blocked]


# --8<-- [start:async]
@emq.job(timeout=30, max_attempts=1)
async def poll_partner(order_id: int) -> str:
    await asyncio.sleep(3600)  # JobTimeout is raised at this await when the 30 s are up
    return f"order {order_id} confirmed"
# --8<-- [end:async]


# --8<-- [start:exit]
@emq.job(max_attempts=1)
def legacy_script() -> None:
    sys.exit(3)  # the attempt fails with "SystemExit: 3"; the worker and its slot carry on
# --8<-- [end:exit]


ACCOUNTS = {1: "ok", 2: "rate-limited", 3: "corrupt"}  # stands in for your database


def push_to_cdn(document_id: int) -> None:
    """Stands in for a CDN's API: document 403 is forbidden, the others meet a network error."""
    if document_id == 403:
        raise PermissionError(f"document {document_id}: forbidden")
    raise ConnectionError("CDN unreachable")


# --8<-- [start:policy]
@emq.job(retry_on=(ConnectionError, TimeoutError), max_attempts=5)
def sync_account(account_id: int) -> str:
    account = ACCOUNTS.get(account_id)
    if account is None:
        raise emq.Discard(f"account {account_id} was deleted")  # dead at once, reason "discarded"
    if account == "rate-limited":
        raise emq.Retry(delay=30)  # again at the server's now + 30 s; it counts as an attempt
    if account == "corrupt":
        raise ValueError("unreadable account")  # not in retry_on: dead at once
    return f"synced {account_id}"  # a ConnectionError would be retried, up to 5 attempts
# --8<-- [end:policy]


# --8<-- [start:backoff]
def patient(attempt: int, exc: BaseException) -> float | None:
    """Seconds before the next try, chosen from the attempt and what it raised; None: no more tries."""
    if isinstance(exc, PermissionError):
        return None  # retrying cannot help: the job is dead now
    return min(30.0 * 2 ** (attempt - 1), 3600.0)  # 30 s, 60 s, 120 s … at most an hour


@emq.job(backoff=patient, max_attempts=10)
def publish(document_id: int) -> None:
    push_to_cdn(document_id)  # PermissionError: dead at once; ConnectionError: tried again in 30 s
# --8<-- [end:backoff]


# --8<-- [start:reindex]
progress: dict[int, int] = {}  # stands in for a progress table


@emq.job(takes_context=True, lease=30)
def reindex(ctx, shard: int) -> int:
    done = 0
    try:
        for _batch in range(100_000):
            time.sleep(0.01)  # stands in for indexing one batch
            done += 1
    except emq.Cancelled:  # raised inside the job when it is cancelled
        progress[shard] = done  # note how far it got; whatever it returns now is discarded
        raise
    return done
# --8<-- [end:reindex]


@emq.job
def send_digest(user_id: int) -> None: ...


# --8<-- [start:signature]
@emq.job
def send_welcome(user_id: int, *, locale: str = "en") -> None: ...
# --8<-- [end:signature]


def example_time_limits() -> None:
    # --8<-- [start:per_call]
    ref = export_report.using(timeout=3, soft_timeout=1).enqueue(7)  # the limits of this one job
    # --8<-- [end:per_call]
    blocked = wait_for_upstream.using(timeout=1).enqueue(5)
    waiting = poll_partner.using(timeout=1).enqueue(12)
    exits = legacy_script.enqueue()
    started = time.monotonic()
    run_until_empty(concurrency=1)  # one slot: the second attempt starts when the first one's limit hits
    took = time.monotonic() - started
    assert emq.get_job(ref.id).result.startswith("report 7: partial,"), emq.get_job(ref.id)
    # --8<-- [start:timed_out]
    job = emq.get_job(blocked.id)
    print(job.state, job.attempts)  # dead 2
    print([e["error"] for e in job.errors])  # ['emq.errors.JobTimeout: attempt 1 ran past its time limit of 1 s', …]
    # --8<-- [end:timed_out]
    assert (job.state, job.attempts) == ("dead", 2)
    assert [e["error"] for e in job.errors] == [
        f"emq.errors.JobTimeout: attempt {n} ran past its time limit of 1 s" for n in (1, 2)]
    assert took < 8, f"the blocked job held its slot: {took:.1f} s"
    job = emq.get_job(waiting.id)
    assert (job.state, job.error.splitlines()[0]) == (
        "dead", "emq.errors.JobTimeout: attempt 1 ran past its time limit of 1 s")
    job = emq.get_job(exits.id)
    assert (job.state, job.error.splitlines()[0]) == ("dead", "SystemExit: 3")


def example_policy() -> None:
    refs = {n: sync_account.enqueue(n) for n in (1, 2, 3, 4)}
    run_until_empty()
    jobs = {n: emq.get_job(r.id) for n, r in refs.items()}
    assert jobs[1].state == "completed"
    assert (jobs[2].state, jobs[2].attempts) == ("scheduled", 1)
    assert 29 <= (jobs[2].due - jobs[2].created).total_seconds() <= 31
    assert (jobs[3].state, jobs[3].reason, jobs[3].attempts) == ("dead", "failed", 1)
    assert (jobs[4].state, jobs[4].reason, jobs[4].error.splitlines()[0]) == (
        "dead", "discarded", "emq.errors.Discard: account 4 was deleted")
    # --8<-- [start:using]
    sync_account.using(timeout=60, max_attempts=2, backoff=(5.0, 60.0))  # limits and (base, cap) travel per call
    try:
        sync_account.using(retry_on=(KeyError,))
    except emq.ConfigurationError as exc:
        print(exc)  # retry_on of …sync_account cannot change per call: a worker reads it from the registered job…
    # --8<-- [end:using]
    try:
        publish.using(backoff=(1.0, 10.0))
    except emq.ConfigurationError as exc:
        assert "a backoff function of" in str(exc)
    else:
        raise AssertionError("a job with a backoff function took a (base, cap) per call")


def example_backoff() -> None:
    """A network error is tried again after patient(1, …) = 30 s; a forbidden document is dead at once."""
    later, forbidden = publish.enqueue(1), publish.enqueue(403)
    run_until_empty()
    job = emq.get_job(later.id)
    assert (job.state, job.attempts) == ("scheduled", 1)
    assert 29.5 <= (job.due - job.created).total_seconds() <= 31
    job = emq.get_job(forbidden.id)
    assert (job.state, job.attempts, job.error.splitlines()[0]) == (
        "dead", 1, "PermissionError: document 403: forbidden")


def example_cancel() -> None:
    # --8<-- [start:cancel]
    ref = send_digest.enqueue_in(timedelta(hours=1), 42)
    print(ref.cancel())  # True: it left the schedule and will never run
    print(emq.cancel(ref.id))  # False: it has ended already (a finished job is left as it is)
    print(emq.get_job(ref.id).state)  # cancelled
    many = send_digest.enqueue_many([((n,), {}) for n in range(3)])
    print(emq.queue("default").cancel_many([r.id for r in many] + ["no-such-id"]))  # ['ok', 'ok', 'ok', 'missing']
    # --8<-- [end:cancel]
    assert emq.get_job(ref.id).state == "cancelled" and emq.queue().counts().cancelled == 4
    running = reindex.using(lease=3).enqueue(5)  # a cancel is pushed to its worker (the renewal: a backstop)
    drain = threading.Thread(target=run_until_empty)
    drain.start()
    try:
        deadline = time.monotonic() + 10
        # Cancelled once it is into its loop: a cancel at its very start comes before its try, with nothing to note.
        while not _into(emq.get_job(running.id), 0.05) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert emq.cancel(running.id) is True
        while 5 not in progress and time.monotonic() < deadline:
            time.sleep(0.02)
    finally:
        drain.join(timeout=30)
    assert 5 in progress and emq.get_job(running.id).state == "cancelled"  # it saw emq.Cancelled


def _into(job: emq.Job, seconds: float) -> bool:
    """Whether the job is active and has run at least this long (its start is on the server's clock)."""
    return job.state == "active" and job.started is not None and \
        datetime.now(UTC) - job.started >= timedelta(seconds=seconds)


def example_pause() -> None:
    refs = send_digest.using(queue="mail").enqueue_many([((n,), {}) for n in range(3)])
    lane = send_digest.using(queue="mail", group="tenant-7").enqueue(99)
    # --8<-- [start:pause]
    mail = emq.queue("mail")
    mail.pause()  # no worker claims from "mail" (every partition); its jobs stay ready
    print(mail.paused())  # True
    # --8<-- [end:pause]
    run_until_empty(["mail"])  # a burst worker leaves a paused queue's jobs where they are
    assert mail.counts().ready == 4 and mail.counts().completed == 0
    # --8<-- [start:resume]
    mail.pause(group="tenant-7")  # only that group's lane; the others go on
    mail.resume()  # parked workers wake at once
    print(mail.paused(), mail.paused(group="tenant-7"))  # False True
    print(mail.paused_groups())  # ['tenant-7']
    # --8<-- [end:resume]
    assert (mail.paused(), mail.paused(group="tenant-7"), mail.paused_groups()) == (False, True, ["tenant-7"])
    run_until_empty(["mail"])
    assert [emq.get_job(r.id, queue="mail").state for r in refs] == ["completed"] * 3
    assert emq.get_job(lane.id, queue="mail").state == "ready"
    mail.resume(group="tenant-7")
    run_until_empty(["mail"])
    assert emq.get_job(lane.id, queue="mail").state == "completed"


def example_enqueue_checks() -> None:
    # --8<-- [start:check]
    try:
        send_welcome.enqueue(42, "de")  # locale is keyword-only
    except TypeError as exc:
        print(exc)  # arguments do not fit job …send_welcome(user_id: int, *, locale: str = 'en') -> None:
        #             too many positional arguments
    send_welcome.enqueue(42, locale="de")  # fits: minted
    # --8<-- [end:check]
    assert emq.queue().counts().ready == 1


def example_recurrence_check() -> None:
    # --8<-- [start:recurrence]
    from django.core.exceptions import ValidationError

    from emq.models import Recurrence

    row = Recurrence(name="welcome-audit", job=send_welcome.name, cron="0 6 * * *", timezone="UTC", args=[1, 2])
    try:
        row.full_clean()  # what the admin runs before it saves
    except ValidationError as exc:
        print(exc.message_dict["args"])  # ['arguments do not fit job …: too many positional arguments. Give …']
    # --8<-- [end:recurrence]
    try:
        row.full_clean()
    except ValidationError as exc:
        assert "too many positional arguments" in exc.message_dict["args"][0], exc
    else:
        raise AssertionError("a row whose arguments do not fit its job was accepted")
