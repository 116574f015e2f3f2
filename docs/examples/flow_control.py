"""Flow control: unique jobs, debounce, rate limits, priorities (run by tests/test_docs_examples.py)."""

import emq
from emq.testing import run_until_empty


class TooManyRequests(Exception):
    """What an HTTP client raises on a 429 (e.g. requests' HTTPError with status 429)."""

    retry_after = 2.0


# --8<-- [start:jobs]
@emq.job
def sync_account(account_id: int) -> None:
    ...


@emq.job
def reindex(doc_id: int, fields: list[str]) -> None:
    ...


@emq.job(group=lambda shop_id, order_id: f"shop-{shop_id}")
def push_order(shop_id: int, order_id: int) -> None:
    try:
        ...  # call the shop's API
    except TooManyRequests as exc:
        raise emq.RateLimited(retry_in=exc.retry_after) from exc  # no attempt spent; the shop's lane waits
# --8<-- [end:jobs]


def example() -> None:
    # --8<-- [start:unique]
    first = sync_account.using(unique_for=60).enqueue(7)
    second = sync_account.using(unique_for=60).enqueue(7)  # within the minute: the same job
    assert (first.created, second.created, second.id) == (True, False, first.id)
    # --8<-- [end:unique]
    # --8<-- [start:debounce]
    for fields in (["title"], ["body"], ["title", "body"]):  # a burst of edits
        ref = reindex.using(debounce=5, unique_key="reindex:42").enqueue(42, fields)
    # one job, due 5 s after the last call, that runs with fields=["title", "body"]
    # --8<-- [end:debounce]
    assert emq.get_job(ref.id).args == [42, ["title", "body"]]
    emq.cancel(ref.id)  # the test need not wait out the quiet period
    # --8<-- [start:rate]
    emq.set_rate_limit("default", 100, 60, group="shop-7")  # 100 starts a minute for one shop
    emq.set_rate_limit("default", 10, 1, group="*")         # and 10 a second for each shop on its own
    print(emq.rate_limits("default"))  # {'shop-7': (100, 60.0), '*': (10, 1.0)}
    emq.remove_rate_limit("default", group="shop-7")
    # --8<-- [end:rate]
    emq.remove_rate_limit("default", group="*")
    # --8<-- [start:quota]
    emq.set_quota("default", 5, group="*")  # at most 5 jobs not yet finished for each shop
    for order_id in range(5):
        push_order.enqueue(9, order_id)
    try:
        push_order.enqueue(9, 5)
    except emq.QuotaExceeded as exc:  # nothing was written for it
        print(exc.group, exc.quota)  # shop-9 5: tell the shop to slow down, or try again later
    # --8<-- [end:quota]
    emq.set_quota("default", None, group="*")
    # --8<-- [start:priority]
    push_order.enqueue(7, 1001)
    push_order.using(priority=10).enqueue(7, 1002)  # runs before shop 7's waiting orders, not before shop 8's
    push_order.enqueue(8, 2001)
    # --8<-- [end:priority]
    run_until_empty()
    assert emq.get_job(first.id).state == "completed"
