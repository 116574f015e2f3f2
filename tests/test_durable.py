"""EMQ_DURABLE on a single server: "fsync" waits for the AOF on disk (WAITAOF 1 0) once per round
trip, and every refusal says what happened. "replica" on a real replica: tests/test_failover.py."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest
import redis

import emq
from emq.core import embedded
from emq.core.connection import get_client
from emq.errors import ConfigurationError, NotDurable
from emq.testing import isolated
from tests import jobs


@pytest.fixture(scope="module")
def aof_url():
    """A private embedded Valkey with AOF on and fsync on every write (so WAITAOF answers at once)."""
    folder = Path(tempfile.mkdtemp(prefix="emq-test-aof-"))
    url = embedded.start(folder, persist=True)
    redis.Redis.from_url(url).config_set("appendfsync", "always")
    yield url
    embedded.stop(folder)
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def on_aof(aof_url, settings):
    settings.EMQ_CLUSTER = False
    with isolated(url=aof_url) as prefix:
        yield prefix


def has_waitaof() -> bool:
    info = get_client().info("server")
    return "valkey_version" in info or tuple(int(x) for x in info["redis_version"].split(".")[:2]) >= (7, 2)


def calls(client, command: str) -> int:
    return int(client.info("commandstats").get(f"cmdstat_{command}", {}).get("calls", 0))


def test_fsync_returns_once_the_aof_is_on_disk_waiting_once_per_round_trip(on_aof, settings):
    """One by one: a WAITAOF each; 25,000 in bulk: 3 round trips of up to 10 chunks, 3 WAITAOFs."""
    # Loads both mint scripts (one job: mint_one.lua, a chunk: mint.lua, which a durable enqueue_many takes
    # as a unique one does): a NOSCRIPT costs a round trip.
    jobs.add.using(queue="warm").enqueue(0, 0)
    jobs.add.using(queue="warm", unique_for=60).enqueue_many([((0, 0), {}), ((1, 1), {})])
    settings.EMQ_DURABLE = "fsync"
    client = get_client()
    before = calls(client, "waitaof")
    ref = jobs.add.using(queue="safe").enqueue(1, 2)
    assert calls(client, "waitaof") == before + 1 + 1  # a connection's first use probes the server (durable.probe)
    refs = jobs.add.using(queue="safe").enqueue_many([((i, i), {}) for i in range(25_000)])
    assert calls(client, "waitaof") == before + 2 + 3
    assert len(refs) == 25_000 and emq.queue("safe").counts().ready == 25_001
    assert emq.get_job(ref.id, queue="safe").state == "ready"


def test_fsync_on_a_server_without_aof_says_so(emq_env, settings):
    """The suite's server runs without appendonly: the probe refuses before anything is written, and
    the error says what to do."""
    if get_client().config_get("appendonly").get("appendonly") == "yes" or not has_waitaof():
        pytest.skip("this server runs with AOF, or has no WAITAOF")
    settings.EMQ_DURABLE = "fsync"
    with pytest.raises(ConfigurationError, match="appendonly") as caught:
        jobs.add.using(queue="safe").enqueue(1, 2)
    assert "nothing was written" in str(caught.value)
    assert emq.queue("safe").counts().ready == 0


def test_replica_without_a_replica_raises_not_durable_before_writing(emq_env, settings, request):
    """No replica attached: the probe's WAIT 1 answers 0, NotDurable says so, and nothing is written."""
    if request.node.callspec.params.get("server_url") == "cluster":
        pytest.skip("the test cluster's masters have no replicas; tests/test_failover.py has one that does")
    settings.EMQ_DURABLE, settings.EMQ_DURABLE_TIMEOUT = "replica", 0.05
    with pytest.raises(NotDurable, match=r"no replica attached \(WAIT 1 answered 0 within 0.05 s\)") as caught:
        jobs.add.using(queue="safe").enqueue_many([((i, i), {}) for i in range(3)])
    assert "nothing was written" in str(caught.value) and "INFO replication" in str(caught.value)
    assert emq.queue("safe").counts().ready == 0


def test_an_unknown_mode_is_refused_before_anything_is_written(emq_env, settings):
    settings.EMQ_DURABLE = "disk"
    with pytest.raises(ConfigurationError, match="EMQ_DURABLE must be one of"):
        jobs.add.using(queue="safe").enqueue(1, 2)
    assert emq.queue("safe").counts().ready == 0


def test_fsync_is_refused_before_writing_on_a_server_without_waitaof(emq_env, settings):
    """Redis 7.0 lacks WAITAOF (7.2+): "fsync" is a ConfigurationError and nothing is written."""
    if has_waitaof():
        pytest.skip("this server has WAITAOF (run with EMQ_TEST_URL pointing at Redis 7.0 to cover this)")
    settings.EMQ_DURABLE = "fsync"
    with pytest.raises(ConfigurationError, match="needs the WAITAOF command"):
        jobs.add.using(queue="safe").enqueue(1, 2)
    assert emq.queue("safe").counts().ready == 0
