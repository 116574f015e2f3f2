"""A flow that failed resumes where it failed: ``emq.retry`` of the job that died (after its cause is
fixed) runs it, and the jobs that died because of it wait for it again and then run, each once.

Each test runs on the embedded Valkey and, with EMQ_TEST_CLUSTER=1, on the 3-node cluster, where
"fa" and "fb" are different slots: the retry reaches children in the other queue through the relay.
"""

from __future__ import annotations

import json
import uuid

import emq
from emq.core import flows
from emq.core.engine import Queue
from emq.testing import run_until_empty
from tests import jobs

QA, QB = "fa", "fb"


def key() -> str:
    return f"emqtest-repair-{uuid.uuid4().hex}"


def drain() -> None:
    run_until_empty(["default", QA, QB], concurrency=8)


def steps_of(ref: emq.JobRef) -> list[emq.JobRef]:
    """The steps of the chain whose last step is ref, in order, as JobRefs."""
    queue, flow_id = ref.get().flow
    q = Queue(queue)
    return [emq.JobRef(json.loads(x)[1], json.loads(x)[0]) for x in q.client.lrange(q.keys.members(flow_id), 0, -1)]


def test_retry_of_a_dead_middle_step_runs_it_and_the_last_step_once_each(emq_env, client):
    """The acceptance: a chain whose middle step died; the cause fixed, retry(middle) resumes it."""
    cause, last_runs, first_runs = key(), key(), key()
    last = emq.chain(jobs.runs_counted.s(2, first_runs), jobs.broken_until_fixed.using(queue=QB).s(cause),
                     jobs.runs_counted.using(queue=QA).s(last_runs))
    first, middle, _ = steps_of(last)
    drain()
    assert middle.get().state == "dead" and last.get().state == "dead"
    assert last.get().reason == f"chain step {middle.id} dead"

    client.set(cause, "fixed")
    assert emq.retry(middle.id, queue=QB) is True
    assert flows.forward(Queue(QB)) is False  # the Pump's forward (the last step is in the other queue): none left
    assert last.get().state == "waiting" and last.get().reason is None
    drain()
    assert middle.get().state == "completed" and middle.get().result == 20
    done = last.get()
    assert (done.state, done.result, done.attempts) == ("completed", 20, 1)
    assert client.get(f"{cause}:runs") == "2" and client.get(last_runs) == "1" and client.get(first_runs) == "1"
    assert first.get().attempts == 1
    assert Queue(QA).counts().dead == 0 and Queue(QB).counts().dead == 0


def test_a_retry_cascades_through_every_later_step_in_both_queues(emq_env, client):
    """Steps 3 to 6 died because step 2 did; a retry of step 2 brings all of them back, in order."""
    cause, runs = key(), key()
    queues = [QA, QB, QA, QA, QB, QA]
    sigs = [jobs.runs_counted.using(queue=QA).s(1, runs), jobs.broken_until_fixed.using(queue=QB).s(cause)]
    sigs += [jobs.runs_counted.using(queue=q).s(runs) for q in queues[2:]]
    last = emq.chain(*sigs)
    steps = steps_of(last)
    drain()
    assert [s.get().state for s in steps] == ["completed", "dead", "dead", "dead", "dead", "dead"]
    client.set(cause, "fixed")
    assert steps[1].retry() is True
    for q in (QB, QA, QA):  # step 3 (QA) hears from QB, step 4 (QA) at once, step 5 (QB) from QA, 6 from QB
        flows.forward(Queue(q))
    flows.forward(Queue(QB))
    assert [s.get().state for s in steps[2:]] == ["waiting"] * 4
    drain()
    assert [s.get().state for s in steps] == ["completed"] * 6
    assert last.get().result == 10 and client.get(runs) == "5"  # step 1 once, steps 3 to 6 once each


def test_a_child_of_two_parents_waits_again_only_for_the_one_retried(emq_env, client):
    """The other parent completed while the child was dead: the child does not wait for it again."""
    cause, runs = key(), key()
    ok = jobs.add.using(queue=QA).enqueue(1, 1)
    bad = jobs.broken_until_fixed.using(queue=QB).enqueue(3, cause)
    child = jobs.runs_counted.using(queue=QA, after=[bad, ok]).enqueue(7, runs)
    drain()
    assert child.get().state == "dead" and child.get().reason == f"parent {bad.id} dead"
    client.set(cause, "fixed")
    assert emq.retry(bad.id, queue=QB) is True
    drain()
    assert child.get().state == "completed" and client.get(runs) == "1"


def test_a_retried_batch_member_resumes_the_batch_and_its_callback(emq_env, client):
    """on_success died with the batch; on_complete ran once with the failure; after the retry the batch
    completes and on_success runs once with the new summary (on_complete is not run again)."""
    cause, ok_key, all_key = key(), key(), key()
    members = [jobs.noop.using(queue=QA).s(i) for i in range(4)] + [jobs.broken_until_fixed.using(queue=QB).s(1, cause)]
    ref = emq.batch(members, on_success=jobs.keep_summary.s(ok_key), on_complete=jobs.keep_summary.s(all_key))
    drain()
    success = ref.callbacks["on_success"]
    assert success.get().state == "dead" and ref.get()["state"] == "failed" and client.llen(all_key) == 1
    client.set(cause, "fixed")
    assert ref.members[-1].retry() is True
    flows.forward(Queue(QB))  # the member is in QB, the batch's record in the default queue
    assert success.get().state == "waiting"
    drain()
    assert ref.get() == {"id": ref.id, "state": "completed", "total": 5, "completed": 5, "dead": 0, "cancelled": 0}
    assert [json.loads(x)["completed"] for x in client.lrange(ok_key, 0, -1)] == [5]
    assert client.llen(all_key) == 1 and success.get().state == "completed"


def test_a_cancelled_job_can_be_retried_and_its_children_resume(emq_env):
    parent = jobs.add.using(queue=QA).enqueue_in(3600, 1, 1)
    child = jobs.add.using(queue=QB, after=[parent]).enqueue(1, 2)
    assert parent.cancel() is True
    drain()
    assert child.get().state == "dead" and child.get().reason == f"parent {parent.id} cancelled"
    assert parent.retry() is True and parent.get().state == "ready"
    drain()
    assert parent.get().state == "completed" and child.get().result == 3


def test_retry_answers_false_for_jobs_neither_dead_nor_cancelled(emq_env):
    done = jobs.add.enqueue(1, 1)
    waiting = jobs.add.enqueue_in(60, 1, 1)
    run_until_empty(["default"])
    assert emq.retry(done.id) is False and emq.retry(waiting.id) is False and emq.retry("nope") is False
    assert emq.queue().retry_many([done.id, "nope"]) == ["completed", "missing"]


def test_a_late_copy_of_the_old_failure_does_not_kill_the_resumed_child(emq_env, client):
    """The relay may forward an entry twice (a Pump that died before acknowledging it): the failure
    from before the retry, arriving again after it, changes nothing."""
    from emq.core.graph import Settled
    from emq.core.records import Outcome

    cause = key()
    parent = jobs.broken_until_fixed.using(queue=QA).enqueue(1, cause)
    child = jobs.add.using(queue=QB, after=[parent]).enqueue(5, 6)
    drain()
    assert child.get().state == "dead"
    assert emq.retry(parent.id, queue=QA) is True
    drain()  # the parent dies again (not fixed): the child with it, in generation 1
    assert child.get().state == "dead"
    assert emq.retry(parent.id, queue=QA) is True
    flows.forward(Queue(QA))  # the Pump's forward of the revival: the child waits again
    (claimed,) = Queue(QA).bclaim(1, "w")  # it completes; its outcome waits in QA's relay list (no Pump yet)
    assert Queue(QA).finish([Outcome(claimed.id, claimed.token, "completed", "10")]) == ["completed"]
    assert child.get().state == "waiting"
    Queue(QB).flow.relay([Settled(child.id, parent.id, "dead", "null", "", False, 0),
                          Settled(child.id, parent.id, "dead", "null", "", False, 1)])
    assert child.get().state == "waiting"
    drain()
    assert child.get().state == "completed" and child.get().result == 11 and parent.get().result == 10
