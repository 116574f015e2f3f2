"""A chord: members side by side, then one callback with the list of their results, in member order.

Each test runs on the embedded Valkey and, with EMQ_TEST_CLUSTER=1, on the 3-node cluster, where
"fa" and "fb" are different slots: members in the other queue send their results through the relay.
"""

from __future__ import annotations

import json
import time
import uuid

import pytest

import emq
from emq.core import flows
from emq.core.engine import Queue
from emq.testing import run_until_empty
from tests import jobs

QA, QB = "fa", "fb"


def key() -> str:
    return f"emqtest-chord-{uuid.uuid4().hex}"


def drain() -> None:
    run_until_empty(["default", QA, QB], concurrency=8)


def test_a_chord_of_1000_members_passes_1000_results_in_order(emq_env, client):
    """The acceptance: one call of the callback, with every result, in the order the members were given."""
    k = key()
    members = [jobs.plus_one.using(queue=QA if i % 3 else QB).s(i) for i in range(1000)]
    ref = emq.chord(members, jobs.keep_results.s(k))
    assert ref.id.startswith("chord-") and ref.callback.get().state == "waiting"
    drain()
    calls = [json.loads(x) for x in client.lrange(k, 0, -1)]
    assert calls == [[i + 1 for i in range(1000)]]
    assert ref.callback.get().result == 1000 and ref.get()["state"] == "completed"
    assert not client.exists(Queue("default").keys.ns + "results:" + ref.id), "handed on, then dropped"


def test_a_dead_member_makes_the_callback_dead_with_the_reason_and_a_retry_resumes_it(emq_env, client):
    cause, k = key(), key()
    members = [jobs.plus_one.s(1), jobs.broken_until_fixed.using(queue=QB).s(2, cause), jobs.plus_one.s(3)]
    ref = emq.chord(members, jobs.keep_results.using(queue=QA).s(k))
    drain()
    bad = ref.members[1]
    dead = ref.callback.get()
    assert (dead.state, dead.reason) == ("dead", f"chord {ref.id} failed: member {bad.id} dead")
    assert ref.get()["state"] == "failed" and client.llen(k) == 0
    client.set(cause, "fixed")
    assert bad.retry() is True
    drain()
    assert [json.loads(x) for x in client.lrange(k, 0, -1)] == [[2, 20, 4]]
    assert ref.get()["state"] == "completed" and ref.callback.get().state == "completed"


def test_results_over_the_payload_limit_fail_the_chord_with_a_reason_that_says_so(emq_env, settings, client):
    settings.EMQ_MAX_PAYLOAD = 500
    k = key()
    ref = emq.chord([jobs.text_of.s(i, 100) for i in range(10)], jobs.keep_results.s(k))
    drain()
    dead = ref.callback.get()
    assert dead.state == "dead" and "EMQ_MAX_PAYLOAD" in dead.reason and "500 bytes" in dead.reason
    assert client.llen(k) == 0 and ref.get()["state"] == "failed"


def test_a_callback_given_with_si_gets_no_results(emq_env):
    ref = emq.chord([jobs.noop.s(1), jobs.noop.s(2)], jobs.add.si(2, 3))
    drain()
    assert ref.callback.get().result == 5


def test_refused_shapes_and_eager_mode(emq_env, settings, client):
    with pytest.raises(ValueError, match="at least one member"):
        emq.chord([], jobs.keep_results.s("k"))
    with pytest.raises(TypeError, match="signatures"):
        emq.chord([jobs.noop.s()], jobs.keep_results)
    with pytest.raises(TypeError, match="arguments do not fit"):
        emq.chord([jobs.noop.s()], jobs.add.s(1, 2))  # the results would be a third argument
    settings.EMQ_EAGER = True
    k = key()
    emq.chord([jobs.plus_one.s(1), jobs.plus_one.s(2)], jobs.keep_results.s(k))
    assert json.loads(client.lrange(k, 0, -1)[0]) == [2, 3]


@pytest.mark.slow
def test_a_chord_of_10000_members(emq_env, client):
    """10,000 results, read 1,000 at a time by the last member's finish, joined once."""
    k = key()
    started = time.monotonic()
    emq.chord([jobs.plus_one.s(i) for i in range(10_000)], jobs.keep_results.s(k))
    minted = time.monotonic() - started
    run_until_empty(["default"], concurrency=16)
    flows.forward(Queue("default"))
    assert json.loads(client.lrange(k, 0, -1)[0]) == [i + 1 for i in range(10_000)]
    print(f"\nchord of 10,000: minted in {minted:.2f} s, all run and the callback called in "
          f"{time.monotonic() - started:.2f} s")
