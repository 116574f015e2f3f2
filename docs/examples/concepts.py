"""Concepts: an idempotent enqueue with job_id (run by tests/test_docs_examples.py)."""

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
