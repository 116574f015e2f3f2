"""Balanced partitions: the k partitions of a queue get hash tags in k distinct equal slot ranges,
so an evenly sliced cluster serves them evenly (plain ``{Q#i}`` tags put 3 of 6 on one of 3 nodes)."""

from __future__ import annotations

import pytest
from redis.crc import REDIS_CLUSTER_HASH_SLOTS as SLOTS
from redis.crc import key_slot

import emq
from emq.core import topology
from emq.core.engine import Queue
from emq.errors import ConfigurationError
from tests import jobs

NAMES = ("clicks", "emails", "a", "tenant-events", "q#x", "Ünïcode")


def slot(tag: str) -> int:
    return key_slot(tag.encode())


@pytest.mark.parametrize("k", [2, 3, 4, 6, 7, 16, 64])
def test_the_k_partitions_of_a_queue_land_in_k_distinct_equal_slot_ranges(settings, k):
    """Partition i's tag hashes into the i-th of k equal slot ranges, for every queue name."""
    settings.EMQ_PARTITIONS = {name: k for name in NAMES if "#" not in name}
    for name in NAMES:
        if "#" in name:
            continue
        ranges = [slot(topology.tag(p)) * k // SLOTS for p in topology.names(name)]
        assert ranges == list(range(k)), (name, ranges)


def test_three_evenly_sliced_nodes_serve_two_of_six_partitions_each(settings):
    settings.EMQ_PARTITIONS = {name: 6 for name in NAMES if "#" not in name}
    for name in NAMES:
        if "#" not in name:
            nodes = sorted(slot(topology.tag(p)) * 3 // SLOTS for p in topology.names(name))
            assert nodes == [0, 0, 1, 1, 2, 2], name


def test_a_partition_keeps_its_readable_name_and_every_key_shares_its_tag(settings, emq_env):
    """The physical name stays ``clicks#3``; its keys carry ``{clicks#3~<s>}``, one slot for all of them."""
    settings.EMQ_PARTITIONS = {"clicks": 6}
    q = Queue("clicks#3")
    assert q.name == "clicks#3"
    assert q.keys.ns == f"{emq_env['EMQ_PREFIX']}:{{clicks#3~10}}:"  # pinned: a change moves stored jobs
    assert {key_slot(k.encode()) for k in (q.keys.ns, q.keys.job("x~3"), q.keys.lane("g"), q.keys.leases)} == {
        slot("clicks#3~10")
    }
    ref = jobs.add.using(queue="clicks", group="g").enqueue(1, 2)
    job = emq.get_job(ref.id, queue="clicks")
    assert job.state == "ready" and topology.tag(job.queue) in Queue(job.queue).keys.ns


def test_queues_that_are_not_partitions_keep_their_name_as_tag(settings):
    """Unpartitioned queues keep ``{Q}`` (no data moves); ``Q#i`` past k is a plain name."""
    settings.EMQ_PARTITIONS = {"clicks": 6}
    assert [topology.tag(n) for n in ("clicks", "other", "clicks#6", "clicks#x", "other#1")] == [
        "clicks", "other", "clicks#6", "clicks#x", "other#1"
    ]


def test_too_many_partitions_is_a_configuration_error(settings):
    settings.EMQ_PARTITIONS = {"clicks": topology.MAX_PARTITIONS + 1}
    with pytest.raises(ConfigurationError, match="more than 1024 partitions"):
        topology.names("clicks")
