"""Cancel a whole flow: ``BatchRef.cancel()`` and ``emq.cancel_flow(id)`` cancel every member or step that
has not finished, and the callbacks, 1,000 jobs a cancel call; they answer how many were cancelled."""

from __future__ import annotations

import pytest

import emq
from emq.core import flows
from emq.core.engine import Queue
from emq.core.records import Outcome
from emq.testing import run_until_empty
from tests import jobs

QA, QB = "fa", "fb"


def test_cancelling_a_batch_of_1000_queued_members_cancels_all_and_its_callback(emq_env, monkeypatch):
    """The acceptance: 1,000 queued members and the callback, one cancel call per 1,000 jobs of a queue."""
    calls = []
    real = Queue.cancel
    monkeypatch.setattr(Queue, "cancel", lambda self, ids: calls.append(len(ids)) or real(self, ids))
    ref = emq.batch([jobs.noop.s(i) for i in range(1000)], on_success=jobs.keep_summary.using(queue=QA).s("k"))
    assert ref.cancel() == 1001
    assert sorted(calls) == [1, 1000]
    c = Queue("default").counts()
    assert (c.ready, c.cancelled) == (0, 1000)
    assert ref.callback.get().state == "cancelled" and Queue(QA).counts().waiting == 0
    flows.forward(Queue("default"))  # the members' ends reach the batch's record in QA (the Pump's job)
    assert ref.get() == {"id": ref.id, "state": "failed", "total": 1000, "completed": 0, "dead": 0, "cancelled": 1000}
    assert ref.cancel() == 0, "nothing left to cancel"
    run_until_empty(["default", QA])
    assert ref.callback.get().state == "cancelled"


def test_a_partly_done_batch_cancels_what_has_not_finished(emq_env):
    q = Queue("default")
    ref = emq.batch([jobs.noop.s(i) for i in range(5)], on_complete=jobs.keep_summary.s("k"))
    done = q.bclaim(2, "w")
    assert q.finish([Outcome(c.id, c.token, "completed", "null") for c in done]) == ["completed"] * 2
    running = q.bclaim(1, "w")
    assert ref.cancel() == 4  # the running one, the two ready ones and the callback
    assert q.get_job(running[0].id).state == "cancelled"
    assert ref.get()["completed"] == 2 and ref.get()["cancelled"] == 3
    assert sorted(m.get().state for m in ref.members) == ["cancelled"] * 3 + ["completed"] * 2


def test_cancel_flow_cancels_every_step_of_a_chain_last_first(emq_env):
    """Every step ends cancelled, none dead because an earlier step was cancelled."""
    last = emq.chain(jobs.plus_one.s(1), jobs.plus_one.using(queue=QB).s(), jobs.plus_one.s(), jobs.plus_one.s())
    home, chain_id = last.get().flow
    assert emq.cancel_flow(chain_id, queue=home) == 4
    run_until_empty(["default", QB])
    assert last.get().state == "cancelled" and Queue("default").counts().dead == 0
    assert Queue("default").counts().cancelled == 3 and Queue(QB).counts().cancelled == 1


def test_cancel_flow_finds_a_chord_by_its_id_in_a_partitioned_queue(emq_env, settings):
    settings.EMQ_PARTITIONS = {"pp": 3}
    members = [jobs.plus_one.using(queue="pp").s(i) for i in range(30)]
    ref = emq.chord(members, jobs.keep_results.using(queue="pp").s("k"))
    assert emq.cancel_flow(ref.id, queue="pp") == 31
    assert emq.queue("pp").counts().cancelled == 31


def test_cancel_flow_of_an_unknown_id_says_where_it_looked(emq_env):
    with pytest.raises(emq.JobNotFound, match="no batch, chord or chain 'batch-nope' in queue 'default'"):
        emq.cancel_flow("batch-nope")
