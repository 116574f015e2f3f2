"""Django's Tasks framework on emq: settings, a task, enqueue and results (run by tests/test_docs_examples.py)."""

from emq.testing import run_until_empty

# --8<-- [start:settings]
TASKS = {
    "default": {
        "BACKEND": "emq.backends.EmqBackend",
        "QUEUES": ["default"],  # a task's queue_name is an emq queue
        "OPTIONS": {
            "max_attempts": 5, "backoff": (1.0, 300.0), "lease": 30.0, "timeout": 600.0,  # emq's defaults
            "ENQUEUE_ON_COMMIT": True,  # the default: inside transaction.atomic(), mint when it commits
        },
    }
}
# --8<-- [end:settings]

# --8<-- [start:task]
try:
    from django.tasks import task  # Django 6
except ImportError:
    from django_tasks import task  # Django 5.2, with the django-tasks backport ("django_tasks" in INSTALLED_APPS)


@task(max_attempts=3, group="newsletters")  # emq's options ride along with Django's
def word_count(text: str) -> int:
    return len(text.split())
# --8<-- [end:task]


# --8<-- [start:policy]
def feed_backoff(attempt: int, exc: BaseException) -> float | None:
    return None if isinstance(exc, PermissionError) else 10.0 * attempt  # None: no more tries


@task(timeout=120, soft_timeout=100, retry_on=(ConnectionError, TimeoutError), backoff=feed_backoff, max_attempts=4)
def fetch_feed(url: str) -> int:
    if not url.startswith("https://"):
        raise ValueError(f"not an https URL: {url!r}")  # not in retry_on: FAILED at once
    return 0  # download the feed and count its entries
# --8<-- [end:policy]


def example() -> None:
    # --8<-- [start:enqueue]
    result = word_count.enqueue("jobs supersede cron")
    print(result.status)  # READY: the job exists in Valkey now
    # --8<-- [end:enqueue]
    run_until_empty()
    # --8<-- [start:result]
    result = word_count.get_result(result.id)
    print(result.status, result.return_value)  # SUCCESSFUL 3
    # --8<-- [end:result]
    assert (str(result.status), result.return_value) == ("SUCCESSFUL", 3), result.status
    # --8<-- [start:later]
    from datetime import timedelta

    from django.utils import timezone

    later = word_count.using(run_after=timezone.now() + timedelta(hours=1), priority=10).enqueue("later")
    # --8<-- [end:later]
    import emq

    assert emq.get_job(later.id).state == "scheduled"
    bad = fetch_feed.enqueue("ftp://example.com/feed")
    run_until_empty()
    bad = fetch_feed.get_result(bad.id)
    assert str(bad.status) == "FAILED" and [e.exception_class_path for e in bad.errors] == ["builtins.ValueError"]
    assert emq.get_job(bad.id).attempts == 1
    # --8<-- [start:transaction]
    from django.db import transaction

    with transaction.atomic():
        result = word_count.enqueue("written with the row")  # e.g. from a post_save handler
        print(result.id, result.status)  # known at once, READY; the job is minted when the block commits
        # --8<-- [end:transaction]
        assert result.enqueued_at is None
    assert emq.get_job(result.id).args == ["written with the row"] and result.enqueued_at is not None
    # --8<-- [start:cancel]
    result = fetch_feed.using(run_after=timezone.now() + timedelta(hours=1)).enqueue("https://example.com/feed")
    emq.cancel(result.id)  # a task result's id is its emq job's id
    result = fetch_feed.get_result(result.id)
    print(result.status, result.errors[0].exception_class_path)  # FAILED emq.errors.Cancelled
    # --8<-- [end:cancel]
    assert (str(result.status), result.errors[0].exception_class_path) == ("FAILED", "emq.errors.Cancelled")
