"""A bulk enqueue's plain jobs go through mint_many.lua (shared fields once a chunk, chunks streamed two
deep): it writes what mint.lua writes, keeps the calls' order across chunks, survives a server that
lost its scripts, and still checks every call before anything is written."""

from __future__ import annotations

import pytest

from emq.core.engine import Queue
from emq.jobs import plan
from emq.testing import check_invariants
from tests import jobs, records

VARYING = ("created", "due")  # server times: the two jobs are minted a moment apart


def stored(client, q: Queue, job_id: str) -> dict:
    return {k: v for k, v in records.fields(client, q.keys.job(job_id)).items() if k not in VARYING}


@pytest.mark.parametrize("options", [
    {},
    {"max_attempts": 5, "lease": 7, "timeout": 9, "soft_timeout": 3, "max_stalled": 2, "backoff": (2, 30)},
    {"priority": 4},
])
def test_a_bulk_job_is_stored_as_mint_lua_stores_it(emq_env, client, options):
    """Per-job groups (a function of the arguments), options off their defaults, a priority: the record
    mint_many.lua writes equals the one the general path's mint.lua writes for the same call."""
    fn = jobs.for_tenant.using(**options)
    calls = [((1, 10), {}), ((2, 20), {}), ((3, 0), {})]
    assert plan.of(fn) is not None
    bulk = fn.enqueue_many(calls)
    q = Queue("default")
    specs = [fn.spec(a, k, "", resolved=fn._resolved()) for a, k in calls]
    q.mint(specs)
    for ref, spec in zip(bulk, specs, strict=True):
        assert ref.created and ref.enqueued_at is not None
        assert stored(client, q, ref.id) == stored(client, q, spec.id)
    assert stored(client, q, bulk[1].id)["group"] == "tenant-2"
    assert q.counts().ready == 6
    check_invariants(q)


def test_keyword_arguments_are_stored_beside_positional_ones(emq_env, client):
    """args and kwargs each stored only off their defaults, as put_job does."""
    refs = jobs.login.enqueue_many([(("ann", "pw"), {"api_token": "t"}), (("bob", "pw"), {})])
    first, second = (r.get() for r in refs)
    assert (first.args, first.kwargs) == (["ann", "pw"], {"api_token": "t"})
    assert (second.args, second.kwargs) == (["bob", "pw"], {})
    assert not records.has(client, Queue("default").keys.job(refs[1].id), "kwargs")


@pytest.mark.parametrize("calls, columns", [
    ([((1, 2), {}), ((3, 4), {})], "a"),  # no job of the chunk has kwargs: no kwargs column sent
    ([((), {}), ((), {})], ""),  # none has either: ids alone
    ([((), {"a": 1}), ((), {})], "k"),  # kwargs but no args
    ([((), {}), ((5,), {"b": [2]})], "ak"),
])
def test_a_chunk_leaves_out_an_arguments_column_no_job_uses_and_each_job_keeps_its_own(emq_env, calls, columns):
    """mint_many.lua reads a job's fields by the chunk's column letters (engine/mint.py's _sent): a column left
    out reads as its default for every job; one sent is each job's own, whichever place it takes."""
    from emq.core.engine.mint import _sent

    refs = jobs.noop.enqueue_many(calls)
    assert [(j.args, j.kwargs) for j in (r.get() for r in refs)] == [(list(a), k) for a, k in calls]
    encoded = (["x", "y"], ["[]" if not a else "[..]" for a, _ in calls], ["{}" if not k else "{..}" for _, k in calls])
    assert _sent(encoded, 0, 2)[1] == columns


def test_2500_jobs_keep_their_order_even_when_the_server_lost_its_scripts(emq_env, client, server_url,
                                                                          embedded_url):
    """Three chunks streamed: the lane holds the ids in the order of the calls, each ref names its job;
    after SCRIPT FLUSH the chunks that found no script run again, still in order."""
    if server_url != embedded_url:
        pytest.skip("SCRIPT FLUSH would slow everyone else's tests on a shared server")
    fn = jobs.add.using(group="one")
    fn.enqueue_many([((0, 0), {})])
    client.script_flush()
    refs = fn.enqueue_many([((i, i), {}) for i in range(2_500)])
    q = Queue("default")
    assert client.lrange(q.keys.ns + "lane:one", 1, -1) == [r.id for r in refs]
    assert all(r.created and r.enqueued_at is not None for r in refs)
    assert refs[1234].get().args == [1234, 1234]
    assert q.counts().ready == 2_501
    check_invariants(q)


def test_a_bad_call_anywhere_writes_nothing(emq_env, client):
    """The 2,001st call cannot be encoded: nothing of the 2,000 before it was written."""
    calls = [((i, i), {}) for i in range(2_000)] + [((object(), 1), {})]
    with pytest.raises(TypeError, match="add"):
        jobs.add.enqueue_many(calls)
    with pytest.raises(TypeError, match="arguments do not fit"):
        jobs.add.enqueue_many([((1, 2), {})] * 1_500 + [((1,), {})])
    assert Queue("default").counts().ready == 0
    assert not client.keys(Queue("default").keys.ns + "job:*")
