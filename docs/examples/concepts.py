"""Concepts: an idempotent enqueue with job_id, ids that stand alone (run by tests/test_docs_examples.py)."""

import emq


@emq.job
def send_invoice(order_id: int) -> None:
    ...


def example() -> None:
    # --8<-- [start:job_id]
    first = send_invoice.using(job_id="invoice-1042").enqueue(1042)
    again = send_invoice.using(job_id="invoice-1042").enqueue(1042)  # already there: nothing new
    assert first.id == again.id == "invoice-1042"
    # --8<-- [end:job_id]
    assert emq.get_job("invoice-1042").state == "ready"


def example_ids() -> None:
    # --8<-- [start:ids]
    ref = send_invoice.using(queue="billing").enqueue(7)
    assert ref.id.startswith("billing.")  # a generated id names its queue: "billing.Hq3kZ0rT8wLx2mVa"
    assert emq.get_job(ref.id).state == "ready"  # found without naming the queue
    assert emq.cancel(ref)  # a JobRef works wherever an id does

    send_invoice.using(queue="billing", job_id="invoice-7").enqueue(7)
    assert emq.get_job("invoice-7").queue == "billing"  # a chosen id: its mint noted where it went
    # --8<-- [end:ids]
