"""Partitioned queues: k sub-queues Q#0…Q#k-1 that enqueue, workers, Pumps and get_job treat as one."""

from __future__ import annotations

import zlib
from collections import Counter, defaultdict

import pytest

import emq
from emq.core import topology
from emq.core.engine import Queue
from emq.core.keys import registry_queues
from emq.core.records import Outcome
from emq.errors import ConfigurationError
from emq.testing import run_until_empty
from tests import jobs
from tests.procs import wait_for


@pytest.fixture
def clicks(emq_env, settings):
    """A queue named clicks with 3 topology."""
    settings.EMQ_PARTITIONS = {"clicks": 3}
    return jobs.add.using(queue="clicks")


def part_of(ref) -> int:
    return int(ref.id.rsplit("~", 1)[1])


def test_a_group_always_lands_in_the_partition_its_crc32_names(clicks):
    """Grouped jobs go to crc32(group) % k; the id carries the partition; get_job finds it."""
    for group in ("tenant-1", "tenant-2", "tenant-3", "tenant-4"):
        refs = clicks.using(group=group).enqueue_many([((i, 0), {}) for i in range(3)])
        want = zlib.crc32(group.encode()) % 3
        assert {part_of(r) for r in refs} == {want}
        assert {r.queue for r in refs} == {"clicks"}
        job = emq.get_job(refs[0].id, queue="clicks")
        assert (job.group, job.queue, job.state) == (group, f"clicks#{want}", "ready")


def test_ungrouped_jobs_go_round_robin(clicks):
    refs = clicks.enqueue_many([((i, 0), {}) for i in range(9)])
    assert sorted(Counter(part_of(r) for r in refs).values()) == [3, 3, 3]
    assert emq.queue("clicks").counts().ready == 9
    assert [Queue(f"clicks#{p}").counts().ready for p in range(3)] == [3, 3, 3]


def test_an_explicit_job_id_stays_idempotent_across_partitions(clicks, client, emq_env):
    """A caller's id picks its partition by hash, so the second enqueue finds the first job."""
    first = clicks.using(job_id="welcome-42").enqueue(1, 1)
    second = clicks.using(job_id="welcome-42").enqueue(9, 9)
    assert first == second and first.id == "welcome-42"
    assert emq.get_job("welcome-42", queue="clicks").args == [1, 1]
    assert emq.queue("clicks").counts().ready == 1
    assert client.smembers(registry_queues(emq_env["EMQ_PREFIX"])) == {"clicks"}
    with pytest.raises(emq.JobNotFound, match="clicks"):
        emq.get_job("nope~1", queue="clicks")


def test_claims_keep_each_groups_fifo_inside_its_partition(clicks):
    """Claiming until empty across the partitions yields each group's jobs in the order enqueued."""
    for i in range(40):
        clicks.using(group=f"g{i % 8}").enqueue(i, 0)
    order = defaultdict(list)
    for _ in range(200):
        claimed = [c for q in emq.queue("clicks").partitions for c in q.bclaim(3, "w")]
        if not claimed:
            break
        for c in claimed:
            order[f"g{c.args[0] % 8}"].append(c.args[0])
    assert sum(map(len, order.values())) == 40
    assert all(seq == sorted(seq) for seq in order.values())


def test_a_burst_worker_on_the_queue_drains_every_partition_once(clicks):
    refs = clicks.enqueue_many([((i, 1), {}) for i in range(30)])
    refs += clicks.using(group="g").enqueue_many([((i, 2), {}) for i in range(30)])
    run_until_empty(["clicks"])
    found = [emq.get_job(r.id, queue="clicks") for r in refs]
    assert {(j.state, j.attempts) for j in found} == {("completed", 1)}
    assert emq.queue("clicks").counts().completed == 60


def test_the_pump_promotes_and_sweeps_in_every_partition(clicks, settings):
    """A delayed job in each partition is promoted; an expired lease is reclaimed by the sweep."""
    settings.EMQ_PUMP_PARK = 0.05
    refs = clicks.enqueue_many([((i, 0), {}) for i in range(3)])
    later = [clicks.enqueue_in(0.2, i, 1) for i in range(3)]
    assert {part_of(r) for r in later} == {0, 1, 2}
    held = [c for q in emq.queue("clicks").partitions for c in q.bclaim(10, "w")]
    assert len(held) == 3
    for q in emq.queue("clicks").partitions:
        q.extend_locks([(c.id, c.token) for c in held if c.id.endswith(q.name[-1])], 1)
    wait_for(lambda: len(emq.queue("clicks").sweep()) or emq.queue("clicks").counts().ready == 3, what="sweep")
    run_until_empty(["clicks"])
    states = {emq.get_job(r.id, queue="clicks").state for r in refs + later}
    assert states == {"completed"}


def test_finish_settles_a_job_in_its_own_partition(clicks):
    ref = clicks.using(group="a").enqueue(1, 2)
    q = Queue(f"clicks#{part_of(ref)}")
    (c,) = q.bclaim(1, "w")
    assert q.finish([Outcome(c.id, c.token, "completed", "3")]) == ["completed"]
    assert emq.get_job(ref.id, queue="clicks").result == 3


def test_workers_and_pumps_expand_a_partitioned_queue(clicks):
    assert topology.expand(["clicks", "mail", "clicks#1"]) == ["clicks#0", "clicks#1", "clicks#2", "mail"]
    assert topology.logical("clicks#2") == "clicks" and topology.logical("mail#2") == "mail#2"
    assert (topology.home("clicks"), topology.home("mail")) == ("clicks#0", "mail")


def test_a_bad_partition_count_is_refused_clearly(emq_env, settings):
    settings.EMQ_PARTITIONS = {"clicks": 0, "a#b": 2}
    with pytest.raises(ConfigurationError, match=r"EMQ_PARTITIONS\['clicks'\]"):
        jobs.add.using(queue="clicks").enqueue(1, 1)
    with pytest.raises(ConfigurationError, match="'#' names a partition"):
        topology.names("a#b")
