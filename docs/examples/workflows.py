"""Workflows: jobs after jobs, chains, batches with callbacks, chords, repairing and cancelling a flow
(run by tests/test_docs_examples.py)."""

import emq
from emq.testing import run_until_empty


@emq.job
def resize(image_id: int) -> str:
    return f"thumbs/{image_id}.jpg"


@emq.job(queue="mail")
def announce(album_id: int) -> str:
    return f"album {album_id} is ready"


@emq.job
def download(url: str) -> str:
    return f"/tmp/{url.rsplit('/', 1)[-1]}"


@emq.job
def parse(path: str) -> dict:
    return {"path": path, "rows": 120}


@emq.job
def store(parsed: dict, table: str) -> int:
    return parsed["rows"]


@emq.job
def notify_done() -> None: ...


@emq.job
def crawl(url: str) -> int:
    return len(url)


# --8<-- [start:callbacks]
@emq.job
def crawl_finished(summary: dict, site: str) -> str:
    # summary = {"id": "batch-…", "total": 3, "completed": 3, "dead": 0, "cancelled": 0}
    return f"{site}: {summary['completed']} of {summary['total']} pages"


@emq.job
def crawl_failed(summary: dict, site: str) -> None: ...
# --8<-- [end:callbacks]


@emq.job
def count_words(page: str) -> int:
    return len(page.split("-"))


# --8<-- [start:chord_callback]
@emq.job
def total_words(counts: list[int], site: str) -> str:
    # counts: each member's result, in the order the members were given
    return f"{site}: {sum(counts)} words in {len(counts)} pages"
# --8<-- [end:chord_callback]


GATEWAY = {"up": False}  # the payment provider, down at first


# --8<-- [start:repair_jobs]
@emq.job
def reserve(order_id: int) -> int:
    return order_id


@emq.job(max_attempts=1)
def charge(order_id: int) -> str:
    if not GATEWAY["up"]:
        raise ConnectionError("payment gateway unreachable")
    return f"paid-{order_id}"


@emq.job
def ship(receipt: str) -> str:
    return f"shipped {receipt}"
# --8<-- [end:repair_jobs]


def example() -> None:
    # --8<-- [start:after]
    uploads = [resize.enqueue(i) for i in (1, 2, 3)]
    # Waits in the "mail" queue until all three completed; a dead one makes it dead as well.
    notice = announce.using(after=uploads).enqueue(42)
    # after_failure="run": runs once the three have ended, however they ended.
    cleanup = announce.using(after=uploads, after_failure="run").enqueue(43)
    # --8<-- [end:after]

    # --8<-- [start:chain]
    # download(url) -> parse(its result) -> store(parse's result, "imports") -> notify_done()
    last = emq.chain(download.s("https://example.com/data.csv"), parse.s(), store.s("imports"), notify_done.si())
    # --8<-- [end:chain]

    # --8<-- [start:batch]
    crawl_all = emq.batch(
        [crawl.s(f"https://example.com/{page}") for page in ("a", "b", "c")],
        on_complete=crawl_finished.s("example.com"),  # once every member ended
        on_failure=crawl_failed.s("example.com"),  # only when one did not complete
    )
    # crawl_all.id, crawl_all.members (JobRefs), crawl_all.callback (the on_complete JobRef)
    # --8<-- [end:batch]

    run_until_empty(["default", "mail"])
    assert notice.get().result == "album 42 is ready" and cleanup.get().state == "completed"
    assert last.get().state == "completed"
    assert crawl_all.callback.get().result == "example.com: 3 of 3 pages"
    assert crawl_all.callbacks["on_failure"].get().state == "cancelled"  # nothing failed: not needed
    assert crawl_all.get()["state"] == "completed"
    example_chord()
    example_repair()
    example_cancel()


def example_chord() -> None:
    # --8<-- [start:chord]
    pages = ["a-b-c", "d-e", "f"]
    words = emq.chord([count_words.s(p) for p in pages], total_words.s("example.com"))
    # words.callback: total_words's JobRef; words.get(): the state and counts, as for a batch
    # --8<-- [end:chord]
    run_until_empty(["default"])
    assert words.callback.get().result == "example.com: 6 words in 3 pages"


def example_repair() -> None:
    GATEWAY["up"] = False  # down again when the suite runs this on a second server
    # --8<-- [start:repair]
    last = emq.chain(reserve.s(7), charge.s(), ship.s())
    # ... the gateway was down: charge ended dead, and ship with it ("chain step <id> dead")
    # --8<-- [end:repair]
    run_until_empty(["default"])
    assert last.get().state == "dead"
    GATEWAY["up"] = True
    # --8<-- [start:resume]
    failed = last.get().reason.split()[2]  # "chain step <id of charge> dead"
    assert emq.retry(failed)  # charge runs again with a fresh budget; ship waits for it again
    # --8<-- [end:resume]
    run_until_empty(["default"])
    assert last.get().result == "shipped paid-7" and emq.get_job(failed).attempts == 2


def example_cancel() -> None:
    # --8<-- [start:cancel]
    crawl_all = emq.batch([crawl.s(f"https://example.com/{n}") for n in range(1000)],
                          on_complete=crawl_finished.s("example.com"))
    cancelled = crawl_all.cancel()  # 1001: every member not finished yet, and the callback
    last = emq.chain(download.s("https://example.com/x.csv"), parse.s(), store.s("imports"))
    queue, chain_id = last.get().flow  # any step's flow: the chain's queue and id
    emq.cancel_flow(chain_id, queue=queue)  # 3
    # --8<-- [end:cancel]
    assert cancelled == 1001 and crawl_all.callback.get().state == "cancelled"
    assert last.get().state == "cancelled"
