"""Workflows: a job after other jobs (in other queues too), batches with callbacks, chains.

Each test runs on the embedded Valkey and, with EMQ_TEST_CLUSTER=1, on the 3-node cluster, where
the queues used here ("fa", "fb") live in different slots: a parent's outcome reaches a child in
the other queue through the relay (the Pump forwards it), not in the parent's own script.
"""

from __future__ import annotations

import json
import time
import uuid

import pytest

import emq
from emq.core.engine import Queue
from emq.testing import run_until_empty
from tests import jobs

QA, QB = "fa", "fb"


def counter() -> str:
    return f"emqtest-counter-{uuid.uuid4().hex}"


def drain(*queues: str) -> None:
    run_until_empty(list(queues) or [QA, QB], concurrency=8)


def test_a_child_after_three_parents_in_two_queues_starts_after_the_last_and_once(emq_env, client):
    """Parents in both queues finish at different times; the child waits, then runs exactly once."""
    key = counter()
    parents = [jobs.sleep_for.using(queue=QA).enqueue(0.1), jobs.sleep_for.using(queue=QA).enqueue(0.2),
               jobs.sleep_for.using(queue=QB).enqueue(0.6)]
    child = jobs.counted.using(queue=QB, after=parents).enqueue(key)
    assert child.get().state == "waiting"
    assert Queue(QB).counts().waiting == 1
    drain()
    done = child.get()
    assert done.state == "completed" and done.attempts == 1 and client.get(key) == "1"
    last_parent = max(p.get().finished for p in parents)
    assert done.started >= last_parent
    assert Queue(QA).counts().relaying == 0 and Queue(QB).counts().waiting == 0


def test_a_dead_parent_makes_the_child_dead_with_the_reason(emq_env):
    parent = jobs.explode.using(queue=QA).enqueue()
    ok = jobs.add.using(queue=QA).enqueue(1, 2)
    child = jobs.add.using(queue=QB, after=[ok, parent]).enqueue(3, 4)
    drain()
    dead = child.get()
    assert dead.state == "dead" and dead.reason == f"parent {parent.id} dead" and dead.attempts == 0


def test_after_failure_run_runs_the_child_anyway(emq_env):
    parent = jobs.explode.using(queue=QA).enqueue()
    child = jobs.add.using(queue=QB, after=[parent], after_failure="run").enqueue(3, 4)
    drain()
    assert child.get().state == "completed" and child.get().result == 7


def test_a_missing_parent_is_an_error_at_enqueue_and_nothing_is_written(emq_env):
    real = jobs.add.using(queue=QA).enqueue(1, 1)
    with pytest.raises(emq.JobNotFound, match="no-such-job"):
        jobs.add.using(queue=QB, after=[real, emq.JobRef("no-such-job", QA)]).enqueue(1, 2)
    with pytest.raises(emq.JobNotFound, match="also-missing"):
        jobs.add.using(queue=QA, after=["also-missing"]).enqueue(1, 2)
    assert Queue(QB).counts().ready + Queue(QB).counts().waiting == 0
    assert Queue(QA).counts().ready == 1 and Queue(QA).counts().waiting == 0


def test_a_parent_that_already_finished_is_honoured_at_once(emq_env):
    parent = jobs.add.using(queue=QA).enqueue(1, 1)
    drain(QA)
    same = jobs.add.using(queue=QA, after=[parent.id]).enqueue(2, 2)
    other = jobs.add.using(queue=QB, after=[parent]).enqueue(3, 3)
    assert same.get().state == "ready" and other.get().state == "ready"


def test_a_cancelled_waiting_job_leaves_the_waiting_set_and_its_children_die(emq_env):
    parent = jobs.sleep_for.using(queue=QA).enqueue(0.2)
    middle = jobs.add.using(queue=QA, after=[parent]).enqueue(1, 1)
    last = jobs.add.using(queue=QB, after=[middle]).enqueue(2, 2)
    assert middle.cancel()
    drain()
    assert middle.get().state == "cancelled" and Queue(QA).counts().waiting == 0
    assert last.get().state == "dead" and last.get().reason == f"parent {middle.id} cancelled"


def test_a_batch_of_1000_calls_its_callback_once_with_the_summary(emq_env, client):
    """The members' outcomes go to the callback's queue through the Pump's relay while they finish: the
    entries that came during a forward are forwarded at once too, not after the Pump's park (15 s)."""
    key = counter()
    ref = emq.batch([jobs.noop.s(i) for i in range(1000)], on_complete=jobs.keep_summary.using(queue=QB).s(key))
    assert len(ref.members) == 1000 and ref.callback.get().state == "waiting"
    assert ref.get()["state"] == "waiting"
    started = time.monotonic()
    drain("default", QB)
    assert time.monotonic() - started < 10
    calls = [json.loads(x) for x in client.lrange(key, 0, -1)]
    assert calls == [{"id": ref.id, "total": 1000, "completed": 1000, "dead": 0, "cancelled": 0}]
    assert ref.get() == {"id": ref.id, "state": "completed", "total": 1000, "completed": 1000, "dead": 0,
                         "cancelled": 0}
    assert ref.callback.get().state == "completed"


def test_a_batch_with_three_failing_members_calls_on_failure_once(emq_env, client):
    fail_key, ok_key = counter(), counter()
    members = [jobs.noop.using(queue=QA).s(i) for i in range(7)] + [jobs.explode.using(queue=QB).s(i) for i in range(3)]
    ref = emq.batch(members, on_success=jobs.keep_summary.s(ok_key), on_failure=jobs.keep_summary.s(fail_key))
    drain("default", QA, QB)
    calls = [json.loads(x) for x in client.lrange(fail_key, 0, -1)]
    assert calls == [{"id": ref.id, "total": 10, "completed": 7, "dead": 3, "cancelled": 0}]
    assert client.llen(ok_key) == 0
    success = ref.callbacks["on_success"].get()
    assert success.state == "dead" and success.reason == f"batch {ref.id} failed"
    assert ref.wait(timeout=1)["dead"] == 3


def test_on_failure_of_a_batch_that_succeeded_is_cancelled(emq_env):
    ref = emq.batch([jobs.noop.s(1)], on_failure=jobs.noop.s())
    drain("default")
    assert ref.callback.get().state == "cancelled"


def test_a_chain_passes_each_result_to_the_next_step(emq_env):
    last = emq.chain(jobs.plus_one.s(1), jobs.double.using(queue=QB).s(), jobs.plus_one.using(queue=QA).s())
    drain("default", QA, QB)
    assert last.get().result == 5  # (1 + 1) * 2 + 1


def test_a_failing_middle_step_leaves_the_rest_dead_with_the_reason(emq_env):
    first = jobs.plus_one.s(1)
    middle = jobs.explode.using(queue=QB).s()
    last = emq.chain(first, middle, jobs.plus_one.s(), jobs.plus_one.using(queue=QA).s())
    drain("default", QA, QB)
    steps = last.get()
    assert steps.state == "dead"
    middle_id = _step_ids(steps.flow)[1]
    assert steps.reason == f"chain step {middle_id} dead"


def test_si_ignores_the_previous_result(emq_env):
    last = emq.chain(jobs.plus_one.s(1), jobs.add.si(10, 20))
    drain("default")
    assert last.get().result == 30


def test_a_chain_in_one_queue_is_one_script_and_waits_in_order(emq_env):
    last = emq.chain(jobs.plus_one.s(1), jobs.plus_one.s(), jobs.plus_one.s())
    assert Queue("default").counts().waiting == 2 and Queue("default").counts().ready == 1
    drain("default")
    assert last.get().result == 4


def test_a_job_after_a_batch_waits_for_the_whole_batch(emq_env):
    ref = emq.batch([jobs.sleep_for.s(0.05) for _ in range(5)])
    after = jobs.add.using(queue=QB, after=[ref]).enqueue(1, 2)
    drain("default", QB)
    assert after.get().state == "completed"
    assert after.get().started >= max(m.get().finished for m in ref.members)


def test_eager_mode_runs_chains_and_batches_inline(emq_env, settings, client):
    settings.EMQ_EAGER = True
    key = counter()
    assert emq.chain(jobs.plus_one.s(1), jobs.double.s()).id
    emq.batch([jobs.noop.s(1), jobs.noop.s(2)], on_complete=jobs.keep_summary.s(key))
    assert json.loads(client.lrange(key, 0, -1)[0])["total"] == 2


def test_refused_shapes(emq_env):
    with pytest.raises(emq.ConfigurationError, match="per call"):
        emq.job(after=["x"])(lambda: None)
    with pytest.raises(TypeError, match="list of jobs"):
        jobs.add.using(after="abc")
    with pytest.raises(emq.ConfigurationError, match="after_failure"):
        jobs.add.using(after_failure="maybe")
    with pytest.raises(TypeError, match="signatures"):
        emq.chain(jobs.add)
    with pytest.raises(ValueError, match="at least one"):
        emq.batch([])
    with pytest.raises(TypeError, match="arguments do not fit"):
        emq.chain(jobs.plus_one.s(1), jobs.plus_one.s(2))  # the previous result would be a third argument


def _step_ids(flow: tuple[str, str]) -> list[str]:
    queue, flow_id = flow
    q = Queue(queue)
    return [json.loads(x)[1] for x in q.client.lrange(q.keys.members(flow_id), 0, -1)]


def test_deleting_a_scheduled_parent_ends_it_for_its_children(emq_env):
    parent = jobs.add.using(queue=QA).enqueue_in(3600, 1, 1)
    child = jobs.add.using(queue=QA, after=[parent]).enqueue(2, 2)
    assert Queue(QA).admin.delete([parent.id]) == ["ok"]
    assert child.get().state == "dead" and child.get().reason == f"parent {parent.id} cancelled"


def test_flows_across_the_partitions_of_a_queue(emq_env, settings):
    """Steps and parents spread over a partitioned queue's partitions (other slots) still meet."""
    settings.EMQ_PARTITIONS = {"pp": 3}
    last = emq.chain(*[jobs.plus_one.using(queue="pp").s(0)] + [jobs.plus_one.using(queue="pp").s() for _ in range(5)])
    parents = [jobs.add.using(queue="pp").enqueue(i, i) for i in range(3)]
    child = jobs.add.using(queue="pp", after=parents + [p.id for p in parents]).enqueue(1, 1)
    drain("pp")
    assert last.wait(timeout=5).result == 6
    assert child.get().state == "completed"
    assert {topology_partition(r.id) for r in parents} == {"pp#0", "pp#1", "pp#2"}


def topology_partition(job_id: str) -> str:
    from emq.core import topology

    return topology.marked("pp", job_id)
