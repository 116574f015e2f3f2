"""Fair tenants: groups from a call or from the arguments, and a cap (run by tests/test_docs_examples.py)."""

import emq
from emq.testing import run_until_empty


# --8<-- [start:group_fn]
@emq.job(queue="imports", group=lambda tenant_id, *args, **kwargs: f"tenant-{tenant_id}")
def import_rows(tenant_id: int, batch: int) -> None:
    ...  # every job of tenant 7 lands in lane "tenant-7"
# --8<-- [end:group_fn]


@emq.job(queue="imports")
def send_report(report_id: int) -> None:
    ...


def example() -> None:
    # --8<-- [start:using]
    send_report.using(group="tenant-7").enqueue(1042)
    # --8<-- [end:using]
    # --8<-- [start:enqueue]
    refs = [import_rows.enqueue(7, batch) for batch in range(1_000)]  # a big tenant …
    refs += [import_rows.enqueue(8, batch) for batch in range(10)]    # … cannot starve a small one
    # --8<-- [end:enqueue]
    # --8<-- [start:cap]
    emq.set_group_limit("imports", "tenant-7", 2)     # at most 2 jobs of tenant-7 run at once
    emq.set_group_limit("imports", "tenant-7", None)  # lift the cap
    # --8<-- [end:cap]
    assert emq.get_job(refs[-1].id, queue="imports").group == "tenant-8"
    emq.queue("imports").set_group_limit("tenant-7", 2)
    run_until_empty(["imports"], concurrency=8)
    assert emq.queue("imports").counts().completed == 1_011
    big = sorted(emq.get_job(r.id, queue="imports").finished for r in refs[:1_000])
    small = max(emq.get_job(r.id, queue="imports").finished for r in refs[1_000:])
    assert small <= big[50], "tenant 8's ten jobs finish among the first claims, not behind tenant 7's thousand"


# --8<-- [start:settings]
EMQ_GROUP_LIMITS = {"imports": {"tenant-7": 2, "tenant-12": 5}}
# --8<-- [end:settings]
