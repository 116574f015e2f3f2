"""Long jobs: a job that checks its lease and fences its write with its token (run by tests/test_docs_examples.py)."""

import emq
from emq.testing import run_until_empty


class FencedStore:
    """Stands in for your database table: a write lands only with a token above the last one."""

    def __init__(self) -> None:
        self.rows: dict[int, tuple[int, int]] = {}  # shard -> (rows, fence)

    def write(self, shard: int, rows: int, fence: int) -> bool:
        _, last = self.rows.get(shard, (0, 0))
        if fence <= last:
            return False  # a newer attempt already wrote: ours is late
        self.rows[shard] = (rows, fence)
        return True


store = FencedStore()


def count_rows(shard: int, chunk: int) -> int:
    return 100


# --8<-- [start:context]
@emq.job(takes_context=True, lease=60)
def rebuild_index(ctx, shard: int) -> int | None:
    # ctx.job_id, ctx.queue, ctx.attempt; ctx.token is this attempt's fencing token
    rows = 0
    for chunk in range(10):
        rows += count_rows(shard, chunk)
        if not ctx.extend_lock():  # renews the lease; False once it was lost
            return None  # another worker holds the job now; this attempt's outcome is refused anyway
    store.write(shard, rows, fence=ctx.token)  # lands only if no newer attempt wrote first
    return rows
# --8<-- [end:context]


def example() -> None:
    ref = rebuild_index.enqueue(7)
    run_until_empty()
    job = emq.get_job(ref.id)
    assert (job.state, job.result) == ("completed", 1000)
    assert store.rows[7] == (1000, 1)
    assert not store.write(7, 5, fence=1)  # a late write of the same attempt is refused
