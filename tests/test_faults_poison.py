"""Fault suite, poison jobs: a job whose stored fields are broken ends dead with a reason that says what
was wrong, in the script where possible (the claim, the finish, the sweep), else in the worker; the
jobs beside it run as usual, the worker process lives on, and every job stays in exactly one place.
"""

from __future__ import annotations

import subprocess

import pytest

import emq
from emq.core.engine import Queue
from emq.testing import check_invariants
from tests import jobs, records
from tests.procs import expire, manage, server_ms, wait_for

# kind -> (how the job's record is broken, the error it ends dead with)
POISON = {
    "args not JSON": ({"args": "[1, 2"}, None, "corrupt: args is not JSON"),
    "lease garbage": ({"lease": "soon"}, None, "corrupt: lease is not a whole number of ms: soon"),
    "lease missing": ({}, "lease", "corrupt: lease missing"),
    "fn missing": ({}, "fn", "corrupt: fn missing"),
    "unknown name": ({"fn": "tests.jobs.no_such_job"}, None, "emq.errors.NotRegistered"),
    "state corrupt": ({"state": "re@dy"}, None, 'corrupt: state is "re@dy"'),
}


def _poison(q, client) -> dict[str, str]:
    """Enqueue one job per POISON kind and break it in place; returns kind -> id."""
    ids = {}
    for kind, (fields, drop, _) in POISON.items():
        ref = jobs.add.enqueue(0, 0)
        records.spoil(client, q.keys.job(ref.id), fields, drop=(drop,) if drop else ())
        ids[kind] = ref.id
    return ids


def _settled(q, ids) -> bool:
    return all(records.field(q.client, q.keys.job(i), "state") in ("completed", "dead") for i in ids)


def test_poison_jobs_end_dead_with_their_reason_and_the_worker_survives(emq_env, client):
    """6 kinds of poison among 10 good jobs: the 10 complete, each poison job is dead as corrupt (or
    NotRegistered: the worker waits for no other that knows the name, EMQ_UNKNOWN_GRACE = 0), the worker
    process is the same one throughout, and every invariant holds."""
    q = Queue("default")
    good = [jobs.add.enqueue(i, 1).id for i in range(5)]
    poison = _poison(q, client)
    good += [jobs.add.enqueue(i, 2).id for i in range(5)]
    no_grace = {**emq_env, "EMQ_UNKNOWN_GRACE": "0"}
    worker = manage(no_grace, "emq_worker", "--concurrency", "4", "--no-supervise", stderr=subprocess.DEVNULL)
    try:
        wait_for(lambda: _settled(q, good + list(poison.values())), timeout=20, what="every job to settle")
        assert worker.poll() is None, "the worker died"
        assert [records.field(client, q.keys.job(i), "state") for i in good] == ["completed"] * 10
        for kind, jid in poison.items():
            h = records.fields(client, q.keys.job(jid))
            assert h["state"] == "dead", kind
            assert h["error"].startswith(POISON[kind][2]), (kind, h["error"])
            assert client.zscore(q.keys.dead, jid) is not None, kind
        check_invariants(q)
        pid = worker.pid
        late = jobs.add.enqueue(40, 2)  # still serving, the same process
        assert late.wait(timeout=10).result == 42 and worker.poll() is None and worker.pid == pid
    finally:
        worker.terminate()
        worker.wait(timeout=20)


@pytest.mark.parametrize("field,value", [("max_attempts", "many"), ("group", None), ("stalled", "x")])
def test_finish_quarantines_an_item_it_cannot_settle_and_settles_the_rest(emq_env, client, field, value):
    """A field broken while the job ran: finish ends that item dead as corrupt, the others settle, and
    the capped group's count is right (held knows the group of a job that lost its group field)."""
    q = Queue("default")
    q.set_group_limit("t", 10)
    refs = [jobs.add.using(group="t").enqueue(i, 0) for i in range(3)]
    claimed = q.bclaim(3, "w")
    bad = claimed[1]
    if value is None:
        records.spoil(client, q.keys.job(bad.id), drop=(field,))
    else:
        records.spoil(client, q.keys.job(bad.id), {field: value})
    outs = [emq.core.records.Outcome(c.id, c.token, "failed", "boom", 0) for c in claimed]
    assert q.finish(outs) == ["ready", "dead", "ready"]
    assert records.field(client, q.keys.job(bad.id), "error").startswith("corrupt: ")
    assert len(refs) == 3
    check_invariants(q)


def test_a_missing_job_releases_its_groups_count_in_finish_extend_and_the_sweep(emq_env, client):
    """A running job's hash deleted: its capped group gets its slot back, whoever notices first."""
    q = Queue("default")
    q.set_group_limit("t", 1)
    for step in ("finish", "extend", "sweep"):
        ref = jobs.add.using(group="t").enqueue(1, 1)
        (c,) = q.bclaim(1, "w")
        assert c.id == ref.id and client.hget(q.keys.active, "t") == "1"
        client.delete(q.keys.job(c.id))
        if step == "finish":
            assert q.finish([emq.core.records.Outcome(c.id, c.token, "completed", "2")]) == ["missing"]
        elif step == "extend":
            assert q.extend_locks([(c.id, c.token)], 1000) == ["missing"]
        else:
            client.zadd(q.keys.leases, {c.id: 1})  # expired long ago
            q.sweep()
        assert client.hget(q.keys.active, "t") is None, step
        check_invariants(q)


def test_a_corrupt_error_history_does_not_stop_the_sweep(emq_env, client):
    """One job's undecodable ``errors`` field: the sweep still reclaims every expired lease."""
    q = Queue("default")
    refs = [jobs.add.enqueue(i, 0) for i in range(3)]
    claimed = q.bclaim(3, "w")
    records.spoil(client, q.keys.job(claimed[0].id), {"errors": "{not json"})
    expire(q, claimed, 1)
    wait_for(lambda: server_ms(client) > max(client.zscore(q.keys.leases, c.id) for c in claimed))
    assert sorted(q.sweep()) == sorted(r.id for r in refs)
    assert [records.field(client, q.keys.job(r.id), "state") for r in refs] == ["ready"] * 3
    check_invariants(q)


def test_a_corrupt_state_in_a_lane_is_quarantined_not_dropped(emq_env, client):
    """A ready job whose state was overwritten: the claim ends it dead as corrupt, claims the rest."""
    q = Queue("default")
    bad, good = jobs.add.enqueue(1, 1), jobs.add.enqueue(2, 2)
    records.spoil(client, q.keys.job(bad.id), {"state": "completed"})  # says completed, but it is not in done
    assert [c.id for c in q.bclaim(2, "w")] == [good.id]
    assert records.field(client, q.keys.job(bad.id), "error") == 'corrupt: state is "completed"'
    check_invariants(q)


def test_check_invariants_names_a_job_outside_every_set_and_a_count_that_drifted(emq_env, client):
    """The walker itself: a job dropped from its lane and a group count off by one are both reported."""
    q = Queue("default")
    ref = jobs.add.enqueue(1, 1)
    check_invariants(q)
    client.delete(q.keys.lane("_"))
    client.hset(q.keys.active, "_", 1)
    with pytest.raises(AssertionError) as broken:
        check_invariants(q)
    assert f"job {ref.id} (ready) is in 0 places" in str(broken.value)
    assert "group '_' counts 1 active but holds 0 leases" in str(broken.value)


def test_a_server_flapping_at_its_memory_limit_is_one_outage_in_the_log(caplog):
    """Refused, let through, refused again within FLAP s: two warnings (full, back), not two a flap."""
    import logging

    from emq.errors import ServerFull
    from emq.runtime.outage import Outage

    log = logging.getLogger("emq.test.outage")
    outage = Outage(log, "worker w")
    with caplog.at_level(logging.DEBUG, logger="emq.test.outage"):
        for _ in range(5):
            outage.failed(ServerFull("used memory > maxmemory"))
            outage.ok()
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warned) == 2 and "server full" in warned[0] and "server back" in warned[1], warned
    assert sum(r.levelno == logging.DEBUG for r in caplog.records) == 8
    outage.last = (outage.last[0], outage.last[1] - 11)  # the last end long ago: a new outage, said again
    outage.failed(ServerFull("used memory > maxmemory"))
    assert caplog.records[-1].levelno == logging.WARNING
