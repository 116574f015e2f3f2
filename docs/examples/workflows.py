"""Workflows: jobs after jobs, chains and batches with callbacks (run by tests/test_docs_examples.py)."""

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
