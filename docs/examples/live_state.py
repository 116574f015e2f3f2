"""Live state: wait for a result, report progress, follow the event stream (run by tests/test_docs_examples.py)."""

import threading

import emq
from emq.runtime.worker import Worker


def rows_of(path: str) -> list:
    return list(range(300))


def store_row(row: int) -> None: ...


# --8<-- [start:progress]
@emq.job(takes_context=True)
def import_file(ctx, path: str) -> int:
    rows = rows_of(path)
    for done, row in enumerate(rows, 1):
        store_row(row)
        ctx.progress(done / len(rows), note=f"{done} of {len(rows)} rows")
    return len(rows)


def log_step(step: str) -> None:
    # from anywhere the job calls, in its thread or task: the running job, or None outside one
    job = emq.current_job()
    if job is not None:
        job.progress(0.5, note=step)
# --8<-- [end:progress]


@emq.job
def add(a: int, b: int) -> int:
    log_step("adding")
    return a + b


def example() -> None:
    worker = Worker(["default"], concurrency=2, park_timeout=1.0)
    thread = threading.Thread(target=worker.run, daemon=True)
    thread.start()
    try:
        # --8<-- [start:wait]
        ref = add.enqueue(2, 3)
        job = ref.wait(timeout=10)  # blocks until completed, dead or cancelled; TimeoutError after 10 s
        assert job.state == "completed" and job.result == 5
        # in a coroutine: job = await ref.wait_async(timeout=10)
        # --8<-- [end:wait]
        imported = import_file.enqueue("rows.csv").wait(timeout=10)
        assert imported.result == 300
    finally:
        worker.stop()
        thread.join(timeout=10)


def example_events() -> None:
    ref = add.enqueue(1, 1)
    seen = []
    # --8<-- [start:events]
    for event in emq.events("default", since="0", timeout=1):  # with EMQ_EVENTS = True
        # event.kind: minted, ready, active, progress, completed, retried, dead, ...
        seen.append((event.id, event.kind, event.detail))
    # --8<-- [end:events]
    assert (ref.id, "minted", "ready") in seen
