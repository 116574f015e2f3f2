"""Durable jobs: steps that run once, sleeps, signals and children (run by tests/test_docs_examples.py)."""

import emq
from emq.testing import run_until_empty

SHIPPED: list[int] = []


def reserve_stock(order_id: int) -> list[str]:
    return [f"sku-{order_id}"]


def charge_card(order_id: int, stock: list[str], key: str) -> dict:
    # key: the payment provider's idempotency key, so a charge that ran but was not recorded is not made twice
    return {"charge": f"ch_{order_id}", "items": len(stock), "key": key}


def ship(order_id: int, answer: dict) -> str:
    SHIPPED.append(order_id)
    return f"shipped {order_id} ({answer['by']})"


# --8<-- [start:checkout]
@emq.job(takes_context=True, queue="orders", max_attempts=3)
def checkout(ctx, order_id: int) -> dict:
    stock = ctx.step("reserve", reserve_stock, order_id)  # runs once; its result is kept on the job
    paid = ctx.step("charge", charge_card, order_id, stock, f"{ctx.job_id}:charge")
    ctx.sleep(COOLING_OFF)  # the run ends here; the slot is freed and no attempt is spent
    answer = ctx.wait_for("approve", timeout=86400)  # a signal's payload, or None after a day
    if answer is None:
        return {"paid": paid, "shipped": None}
    return {"paid": paid, "shipped": ctx.step("ship", ship, order_id, answer)}
# --8<-- [end:checkout]


COOLING_OFF = 0.2  # seconds here; an hour (3600) in the guide's story


# --8<-- [start:webhook]
def approve(job_id: str, user: str) -> bool:
    """Called by the view that receives the approval (a webhook, a button in your own app)."""
    return emq.signal(job_id, "approve", {"by": user}, queue="orders")  # True: the job took it
# --8<-- [end:webhook]


# --8<-- [start:children]
@emq.job(queue="orders")
def thumbnail(image: str) -> str:
    return f"thumbs/{image}"


@emq.job(takes_context=True, queue="orders")
def album(ctx, images: list[str]) -> list[str]:
    for image in images:
        ctx.spawn(thumbnail, image)  # minted once, whatever later runs do
    return ctx.wait_children()  # the run ends until every child has ended; then their results, in order
# --8<-- [end:children]


def example() -> None:
    SHIPPED.clear()  # the suite runs this once per server
    ref = checkout.enqueue(7)
    run_until_empty(["orders"])  # reserve, charge, sleep, and the wait: the job is "waiting" now
    job = ref.get()
    assert job.state == "waiting" and [s.name for s in job.steps] == ["reserve", "charge", "1", "approve"]
    assert approve(ref.id, "ops") is True
    assert approve(ref.id, "ops") is False  # the first signal of a name counts
    run_until_empty(["orders"])
    job = ref.get()
    assert job.state == "completed" and job.attempts == 1 and SHIPPED == [7]
    assert job.result["shipped"] == "shipped 7 (ops)" and job.result["paid"]["key"] == f"{ref.id}:charge"

    pics = album.enqueue(["a.png", "b.png"])
    run_until_empty(["orders"])
    assert pics.get().result == ["thumbs/a.png", "thumbs/b.png"]
