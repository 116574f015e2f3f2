"""Coming from Celery: the same job written for emq (run by tests/test_docs_examples.py)."""

from datetime import timedelta

from django.utils import timezone

import emq


# --8<-- [start:job]
@emq.job(queue="mail", max_attempts=4, backoff=(2.0, 600.0))  # Celery: max_retries=3, retry_backoff
def send_receipt(order_id: int) -> None:
    ...


@emq.job(cron="*/15 * * * *")  # Celery beat: crontab(minute="*/15")
def sync_stock() -> None:
    ...
# --8<-- [end:job]


# --8<-- [start:policy]
# Celery: @shared_task(bind=True, time_limit=300, soft_time_limit=240, autoretry_for=(ConnectionError,), max_retries=3)
@emq.job(timeout=300, soft_timeout=240, retry_on=(ConnectionError,), max_attempts=4)
def charge(order_id: int) -> None:
    if order_id < 0:
        raise emq.Discard("no such order")  # Celery: raise Reject(...) / Ignore()
    if order_id == 0:
        raise emq.Retry(delay=60)  # Celery: raise self.retry(countdown=60)
# --8<-- [end:policy]


def example() -> None:
    # --8<-- [start:calls]
    send_receipt.enqueue(1042)                                  # .delay(1042)
    send_receipt.enqueue_in(timedelta(minutes=10), 1042)       # .apply_async((1042,), countdown=600)
    send_receipt.enqueue_at(timezone.now() + timedelta(hours=1), 1042)  # .apply_async((1042,), eta=...)
    send_receipt.using(queue="priority-mail").enqueue(1042)    # .apply_async((1042,), queue="priority-mail")
    send_receipt.using(job_id="receipt-1042").enqueue(1042)    # .apply_async((1042,), task_id="receipt-1042")
    send_receipt.enqueue_on_commit(1042)                       # .delay_on_commit(1042)
    # --8<-- [end:calls]
    assert emq.queue("mail").counts().ready == 3
    assert emq.queue("mail").counts().scheduled == 2
    # --8<-- [start:cancel]
    ref = charge.enqueue_in(timedelta(minutes=5), 1042)
    emq.cancel(ref.id)  # Celery: app.control.revoke(task_id, terminate=True)
    # --8<-- [end:cancel]
    assert emq.get_job(ref.id).state == "cancelled"
    later, gone = charge.enqueue(0), charge.enqueue(-1)
    from emq.testing import run_until_empty

    run_until_empty()
    assert (emq.get_job(later.id).state, emq.get_job(gone.id).reason) == ("scheduled", "discarded")
