"""A partitioned queue is whole: every entry point resolves its name through the topology.

With ``EMQ_PARTITIONS={"clicks": 3}`` a recurrence on ``clicks`` mints where its workers claim,
the admin's *Run now* runs, a Django task is found by ``get_result`` through to SUCCESSFUL, and
``emq.queue("clicks")`` extends, releases and sweeps in the partition that holds each job.
Runs on every server of the suite, the 3-node cluster included.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

import emq
from emq.core import topology
from emq.core.engine import Queue
from emq.models import Recurrence
from emq.runtime.pump import Pump
from emq.scheduling import rows
from emq.testing import run_until_empty
from tests import jobs
from tests.procs import server_ms, wait_for


@pytest.fixture
def clicks(emq_env, settings):
    settings.EMQ_PARTITIONS = {"clicks": 3}
    settings.EMQ_PUMP_PARK = 0.2
    return jobs.add.using(queue="clicks")


def occurrences(name: str) -> list[emq.Job]:
    """The jobs a recurrence minted, wherever they were placed."""
    client = Queue("clicks").client
    found = []
    for q in emq.queue("clicks").partitions:
        for key in client.zrange(q.keys.done, 0, -1) + client.zrange(q.keys.scheduled, 0, -1):
            if key.startswith(f"repeat:{name}:"):
                found.append(q.get_job(key))
    return found


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("group", ["", "tenant-9"])
def test_a_recurrence_on_a_partitioned_queue_mints_where_workers_claim(clicks, group):
    row = Recurrence.objects.create(name="every-second", job="tests.jobs.add", args=[2, 3], queue="clicks",
                                    group=group, every=timedelta(seconds=1), timezone="UTC")
    home = rows.placement("clicks", group)
    assert home.name == topology.of_group("clicks", group) and home.name.startswith("clicks#")
    assert home.repeat.names() == [row.name]
    pump = Pump([Queue(n) for n in topology.expand(["clicks"])]).start()
    try:
        wait_for(lambda: home.client.zcard(home.keys.scheduled) or home.counts().ready, timeout=5, what="a mint")
        wait_for(lambda: home.counts().ready, timeout=5, what="the occurrence falling due")
    finally:
        pump.close()
    run_until_empty(["clicks"])
    done = [j for j in occurrences(row.name) if j.state == "completed"]
    assert done and {(j.queue, j.result, j.group or "") for j in done} == {(home.name, 5, group or "_")}


@pytest.mark.django_db(transaction=True)
def test_run_now_of_a_recurrence_on_a_partitioned_queue_runs(clicks):
    row = Recurrence.objects.create(name="nightly", job="tests.jobs.add", args=[20, 22], queue="clicks",
                                    cron="0 3 * * *", timezone="UTC")
    job_id = rows.run_now(row)
    run_until_empty(["clicks"])
    job = emq.get_job(job_id, queue="clicks")
    assert (job.state, job.result, job.queue) == ("completed", 42, topology.home("clicks"))


def test_a_task_on_a_partitioned_queue_is_found_through_to_successful(clicks, settings):
    from emq.contrib.tasks.compat import TaskResultStatus
    from tests import tasks

    settings.TASKS = {"default": {"BACKEND": "emq.backends.EmqBackend", "QUEUES": ["default", "clicks"]}}
    result = tasks.add.using(queue_name="clicks").enqueue(2, 3)
    assert tasks.add.get_result(result.id).status == TaskResultStatus.READY
    run_until_empty(["clicks"])
    done = tasks.add.get_result(result.id)
    assert (done.status, done.return_value, done.task.queue_name) == (TaskResultStatus.SUCCESSFUL, 5, "clicks")


def test_the_queue_handle_acts_on_the_partition_holding_each_job(clicks):
    """extend_lock / release_lock / sweep of emq.queue("clicks") reach the job's own partition."""
    refs = clicks.enqueue_many([((i, 0), {}) for i in range(3)])
    refs.append(clicks.using(group="tenant-1", job_id="chosen-id").enqueue(9, 9))  # no partition mark
    held = {c.id: c for q in emq.queue("clicks").partitions for c in q.bclaim(10, "w")}
    assert set(held) == {r.id for r in refs} and len({emq.get_job(i, "clicks").queue for i in held}) == 3
    q = emq.queue("clicks")
    statuses = q.extend_locks([(i, c.token) for i, c in held.items()] + [("nope~1", 1)], 60_000)
    assert statuses == ["ok"] * 4 + ["missing"]
    assert q.release_lock("chosen-id", held["chosen-id"].token) and emq.get_job("chosen-id", "clicks").state == "ready"
    assert not q.release_lock("chosen-id", held["chosen-id"].token)  # released: the token is no longer active
    marked = [i for i in held if i != "chosen-id"]
    assert q.extend_locks([(i, held[i].token) for i in marked], 1) == ["ok"] * 3
    now = server_ms(Queue("clicks#0").client)
    wait_for(lambda: server_ms(Queue("clicks#0").client) > now + 5, what="the 1 ms leases to expire")
    assert sorted(q.sweep()) == sorted(marked)
    assert {emq.get_job(i, "clicks").state for i in marked} == {"ready"}


def test_a_queue_has_the_same_methods_partitioned_or_not(clicks):
    """emq.Queue is the logical queue: its methods do not change with EMQ_PARTITIONS, and the worker's
    one-partition operations (claim, finish) are not among them."""
    assert emq.Queue is emq.LogicalQueue and isinstance(emq.queue("clicks"), emq.Queue)
    partitioned, plain = emq.queue("clicks"), emq.queue("default")
    assert len(partitioned.partitions) > 1 and len(plain.partitions) == 1
    assert dir(partitioned) == dir(plain)
    for name in ("bclaim", "finish", "mint", "keys", "client"):
        assert not hasattr(partitioned, name) and not hasattr(plain, name)
