"""Operating: read a failed job, count a queue, listen to outcomes (run by tests/test_docs_examples.py)."""

import emq
from emq.testing import run_until_empty


@emq.job(max_attempts=2, backoff=(0.0, 0.0))
def charge(order_id: int) -> None:
    raise ConnectionError(f"payment API unreachable for order {order_id}")


def example() -> None:
    ref = charge.enqueue(1042)
    run_until_empty()
    # --8<-- [start:failed]
    job = emq.get_job(ref.id)
    print(job.state, job.reason, job.attempts)  # dead failed 2
    print(job.error.splitlines()[0])  # ConnectionError: payment API unreachable for order 1042
    for attempt in job.errors:  # one entry per failed attempt: attempt, at (server ms), error, worker
        print(attempt["attempt"], attempt["error"])
    # --8<-- [end:failed]
    assert (job.state, job.reason, job.attempts) == ("dead", "failed", 2)
    assert job.error.startswith("ConnectionError: payment API unreachable for order 1042")
    assert [a["attempt"] for a in job.errors] == [1, 2]
    # --8<-- [start:counts]
    counts = emq.queue("default").counts()
    print(counts.scheduled, counts.ready, counts.active, counts.completed, counts.dead)
    # --8<-- [end:counts]
    assert counts.dead == 1


# --8<-- [start:signal]
# shop/apps.py, in ShopConfig.ready()
from django.dispatch import receiver

from emq.signals import job_finished


@receiver(job_finished)
def on_job_finished(sender, queue, job, outcome, state, duration, exception, **kwargs):
    # outcome: completed, retried, dead (or stale: the lease was lost and the server kept nothing)
    if outcome == "dead":
        print(f"job {job.id} ({job.name}) in {queue} is dead after {duration:.1f}s: {exception!r}")
# --8<-- [end:signal]


# --8<-- [start:metrics_urls]
# urls.py: Prometheus scrapes this (staff users, or Authorization: Bearer <EMQ_METRICS_TOKEN>)
import emq.metrics  # noqa: E402
from django.urls import path  # noqa: E402

urlpatterns = [path("metrics", emq.metrics.view)]
# --8<-- [end:metrics_urls]
