"""Scaling out: a cluster and a partitioned queue (run by tests/test_docs_examples.py with 3 partitions)."""

import emq

# --8<-- [start:settings]
EMQ_CLUSTER = True
EMQ_URL = "redis://valkey-node-1:6379/0"  # any node: the client discovers the others
EMQ_PARTITIONS = {"clicks": 3}  # clicks#0, clicks#1, clicks#2: one slot each
# --8<-- [end:settings]


# --8<-- [start:job]
@emq.job(queue="clicks", group=lambda user_id, *args: f"user-{user_id}")
def count_click(user_id: int, path: str) -> None:
    ...
# --8<-- [end:job]


def example() -> None:
    # --8<-- [start:partitions]
    ref = count_click.enqueue(7, "/pricing")  # user-7's partition: crc32("user-7") % 3
    clicks = emq.queue("clicks")
    print([q.name for q in clicks.partitions])  # ['clicks#0', 'clicks#1', 'clicks#2']
    print(emq.get_job(ref.id, queue="clicks").queue)  # the partition that holds the job
    print(clicks.counts().ready)  # 1: counts are summed over the partitions
    # --8<-- [end:partitions]
    assert [q.name for q in clicks.partitions] == ["clicks#0", "clicks#1", "clicks#2"]
    assert emq.get_job(ref.id, queue="clicks").queue in {"clicks#0", "clicks#1", "clicks#2"}
    assert clicks.counts().ready == 1
