"""Fault suite, a job key of the wrong type: something other than emq wrote a string (or a list) where a
job's hash belongs. Every script that reads a job checks the key's type before its first write to
it: the bad id ends dead as corrupt, in the same call, and the rest of the batch goes on. Before,
the claim stopped halfway with WRONGTYPE and left good jobs active without a lease and ready
outside every lane.
"""

from __future__ import annotations

import pytest

from emq.core.engine import Queue
from emq.core.records import Outcome
from emq.testing import check_invariants
from tests import jobs, records
from tests.procs import expire, server_ms, wait_for

STRING = "corrupt: the job's key held a string (\"garbage\"), not a hash"


def _break(client, q, job_id: str, kind: str = "string") -> None:
    """Replace the job's record with a foreign value. Under EMQ_RECORD_FORMAT "2" a job's record is itself a
    string, but "garbage" is not a packed one (no head), so the key still holds the wrong thing."""
    key = q.keys.job(job_id)
    client.delete(key)
    if kind == "string":
        client.set(key, "garbage")
    else:
        client.rpush(key, "a", "b")


def _dead_corrupt(client, q, job_id: str, error: str = STRING) -> None:
    h = records.fields(client, q.keys.job(job_id))
    assert h["state"] == "dead" and h["reason"] == "corrupt" and h["error"] == error, h
    assert client.zscore(q.keys.dead, job_id) is not None


def test_a_claim_quarantines_a_string_job_key_and_leases_the_rest(emq_env, client):
    """The issue's case: 11 jobs in a lane, the 6th key a string: 10 leased, the 6th dead as corrupt,
    nothing active without a lease and nothing ready outside a lane."""
    q = Queue("default")
    refs = [jobs.add.enqueue(i, 1) for i in range(11)]
    _break(client, q, refs[5].id)
    claimed = q.bclaim(11, "w")
    assert [c.id for c in claimed] == [r.id for i, r in enumerate(refs) if i != 5]
    _dead_corrupt(client, q, refs[5].id)
    assert client.hget(q.keys.stats, "dead") == "1"
    check_invariants(q)


def test_a_claim_quarantines_a_list_job_key_of_a_capped_group(emq_env, client):
    """Another type (a list), in a capped group: the group's count holds the leases taken, no more."""
    q = Queue("default")
    q.set_group_limit("t", 5)
    refs = [jobs.add.using(group="t").enqueue(i, 1) for i in range(4)]
    _break(client, q, refs[0].id, "list")
    assert [c.id for c in q.bclaim(4, "w")] == [r.id for r in refs[1:]]
    _dead_corrupt(client, q, refs[0].id, "corrupt: the job's key held a list, not a hash")
    assert client.hget(q.keys.active, "t") == "3"
    check_invariants(q)


def test_finish_extend_and_release_quarantine_a_string_job_key(emq_env, client):
    """A key replaced while its job ran: each script ends that item dead and settles the rest."""
    q = Queue("default")
    q.set_group_limit("t", 10)
    for op in ("finish", "extend", "release", "progress"):
        [jobs.add.using(group="t").enqueue(i, 0) for i in range(3)]
        claimed = q.bclaim(3, "w")
        bad = claimed[1]
        _break(client, q, bad.id)
        items = [(c.id, c.token) for c in claimed]
        if op == "finish":
            assert q.finish([Outcome(c.id, c.token, "completed", "null") for c in claimed]) == \
                ["completed", "dead", "completed"]
        elif op == "extend":
            assert q.extend_locks(items, 5000) == ["ok", "missing", "ok"]
            q.finish([Outcome(c.id, c.token, "completed", "null") for c in (claimed[0], claimed[2])])
        elif op == "release":
            assert q.release_locks(items) == ["ok", "missing", "ok"]
            q.cancel([claimed[0].id, claimed[2].id])
        else:
            assert q.live.renew(items, 5000, [(c.id, c.token, 0.5, "") for c in claimed]) == ["ok", "missing", "ok"]
            q.finish([Outcome(c.id, c.token, "completed", "null") for c in (claimed[0], claimed[2])])
        _dead_corrupt(client, q, bad.id)
        assert client.hget(q.keys.active, "t") is None, op
        check_invariants(q)


def test_cancel_quarantines_a_string_job_key_and_cancels_the_rest(emq_env, client):
    q = Queue("default")
    refs = [jobs.add.enqueue_in(60, i, 1) for i in range(3)]
    _break(client, q, refs[1].id)
    assert q.cancel([r.id for r in refs]) == ["ok", "dead", "ok"]
    _dead_corrupt(client, q, refs[1].id)
    check_invariants(q)


def test_the_pump_quarantines_string_job_keys_it_promotes_or_reclaims(emq_env, client):
    """Promotion of due jobs and the stalled sweep: the bad id ends dead, the others move on."""
    q = Queue("default")
    scheduled = [jobs.add.enqueue_in(60, i, 1) for i in range(3)]
    _break(client, q, scheduled[1].id)
    client.zadd(q.keys.scheduled, {r.id: 1 for r in scheduled})  # due long ago
    tick = q.tick("p", ttl_ms=5000, park_ms=1000)
    assert tick.promoted == 3
    _dead_corrupt(client, q, scheduled[1].id)
    claimed = q.bclaim(10, "w")
    assert sorted(c.id for c in claimed) == sorted([scheduled[0].id, scheduled[2].id])
    _break(client, q, claimed[0].id)
    expire(q, claimed, 1)
    wait_for(lambda: server_ms(client) > max(client.zscore(q.keys.leases, c.id) for c in claimed[1:]))
    assert q.sweep() == [claimed[1].id]
    _dead_corrupt(client, q, claimed[0].id)
    check_invariants(q)


@pytest.mark.parametrize("op,answer", [("delete", "ok"), ("retry", "dead"), ("run_now", "dead")])
def test_admin_scripts_quarantine_a_string_job_key(emq_env, client, op, answer):
    """The dashboard's actions on a batch with one bad id: the bad one is quarantined (delete then
    deletes it), the others are acted on."""
    q = Queue("default")
    refs = [jobs.add.enqueue_in(60, i, 1) for i in range(3)]
    _break(client, q, refs[1].id)
    ids = [r.id for r in refs]
    if op == "delete":
        assert q.admin.delete(ids) == ["ok", "ok", "ok"]
        assert not any(client.exists(q.keys.job(i)) for i in ids)
    elif op == "retry":
        assert q.admin.retry(ids) == ["scheduled", answer, "scheduled"]
        _dead_corrupt(client, q, refs[1].id)
    else:
        assert q.admin.run_now(ids) == ["ok", answer, "ok"]
        _dead_corrupt(client, q, refs[1].id)
    check_invariants(q)


def test_a_flow_child_whose_key_is_a_string_is_quarantined_when_its_parent_ends(emq_env, client):
    """A waiting child's key replaced: the parent's finish quarantines it and settles its sibling."""
    q = Queue("default")
    parent = jobs.add.enqueue(1, 1)
    kids = [jobs.add.using(after=[parent]).enqueue(i, 1) for i in range(2)]
    _break(client, q, kids[0].id)
    (c,) = q.bclaim(1, "w")
    assert q.finish([Outcome(c.id, c.token, "completed", "2")]) == ["completed"]
    _dead_corrupt(client, q, kids[0].id)
    assert records.field(client, q.keys.job(kids[1].id), "state") == "ready"
    check_invariants(q)


def test_a_server_error_other_than_a_wrong_type_still_raises(emq_env, client):
    """Only WRONGTYPE is a corrupt job: the check must not swallow other errors (none here: a sanity
    check that a good batch pays nothing and answers as before)."""
    q = Queue("default")
    refs = [jobs.add.enqueue(i, 1) for i in range(3)]
    claimed = q.bclaim(3, "w")
    assert [c.id for c in claimed] == [r.id for r in refs]
    assert q.finish([Outcome(c.id, c.token, "completed", "null") for c in claimed]) == ["completed"] * 3
