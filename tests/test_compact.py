"""What the enqueue speed and memory work changed: shorter ids, compact job hashes, cheap settings reads."""

from __future__ import annotations

import pytest

from emq.core.engine import Queue
from emq.errors import PayloadTooLarge
from tests import jobs


def test_generated_ids_are_24_hex_digits_and_distinct(emq_env):
    """A generated id is 96 random bits in hex: 8 characters shorter than a uuid4's, in each key and lane."""
    refs = jobs.add.enqueue_many([((i, 0), {}) for i in range(1_000)])
    ids = {r.id.split("~")[0] for r in refs}
    assert len(ids) == 1_000
    assert all(len(i) == 24 and int(i, 16) >= 0 for i in ids)


def test_backoff_is_stored_compactly_and_claimed_as_given(emq_env, client):
    """(1.0, 300.0) is stored as "1,300" and a claim reads it back as (1.0, 300.0); a fraction is kept exactly."""
    whole = jobs.add.using(backoff=(1.0, 300.0)).enqueue(1, 2)
    part = jobs.add.using(backoff=(0.25, 7.5)).enqueue(3, 4)
    q = Queue("default")
    assert client.hget(q.keys.job(whole.id), "backoff") == "1,300"
    assert client.hget(q.keys.job(part.id), "backoff") == "0.25,7.5"
    assert {c.id: c.backoff for c in q.bclaim(2, "w")} == {whole.id: (1.0, 300.0), part.id: (0.25, 7.5)}


def test_a_job_with_a_100_byte_argument_stays_packed_on_the_embedded_server(emq_env, client, server_url, embedded_url):
    """The embedded Valkey keeps a job hash a listpack up to 1,024-byte values (default 64): ~half the memory."""
    if server_url != embedded_url:
        pytest.skip("only the embedded server is started with hash-max-listpack-value 1024")
    ref = jobs.add.enqueue("x" * 100, "y")
    assert client.object("encoding", Queue("default").keys.job(ref.id)) == "listpack"


def test_settings_changed_between_two_enqueues_are_seen_at_once(emq_env, settings):
    """Settings are read from Django's settings object on each call: an override applies to the next enqueue,
    a call without arguments included (its size is still checked)."""
    jobs.add.enqueue(1, 2)
    settings.EMQ_MAX_PAYLOAD = 3
    with pytest.raises(PayloadTooLarge):
        jobs.pid.enqueue()
    with pytest.raises(PayloadTooLarge):
        jobs.add.enqueue(1, 2)
    del settings.EMQ_MAX_PAYLOAD
    assert jobs.add.enqueue(1, 2).id
