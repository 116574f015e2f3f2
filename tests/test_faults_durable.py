"""Fault suite, EMQ_DURABLE: a mode the server cannot honour is refused before anything is written.

Before: with "fsync" against a server without AOF, every one of 110 enqueues raised
ConfigurationError, and all 110 jobs were written and ran (a caller that retried duplicated them).
Now each connection probes its server once before its first write (durable.probe), and again after
a reconnect: a server restarted without AOF is refused too.
"""

from __future__ import annotations

import pytest

import emq
from emq.core.connection import get_client
from emq.errors import ConfigurationError
from tests import jobs
from tests.private_server import PrivateValkey


@pytest.fixture
def private(tmp_path, settings):
    """A private Valkey with AOF on (so "fsync" holds until the test turns it off)."""
    server = PrivateValkey(tmp_path).start()
    settings.EMQ_URL, settings.EMQ_PREFIX, settings.EMQ_CLUSTER = server.url, "durable", False
    yield server
    server.stop()


def _ready(queue: str) -> int:
    return emq.queue(queue).counts().ready


def test_110_fsync_enqueues_on_a_server_without_aof_write_nothing(private, settings):
    """The issue's case: 100 one by one and a bulk of 10, each refused, 0 jobs written."""
    private.client().config_set("appendonly", "no")
    settings.EMQ_DURABLE = "fsync"
    refused = 0
    for i in range(100):
        with pytest.raises(ConfigurationError, match="runs without it .*nothing was written"):
            jobs.add.using(queue="safe").enqueue(i, i)
        refused += 1
    with pytest.raises(ConfigurationError, match="nothing was written"):
        jobs.add.using(queue="safe").enqueue_many([((i, i), {}) for i in range(10)])
    assert refused == 100 and _ready("safe") == 0


def test_a_reconnect_probes_again(private, settings):
    """A probe that passed holds for its connection; once the connection is made again (a server
    restarted with other settings), the server is asked again before the next write."""
    settings.EMQ_DURABLE = "fsync"
    jobs.add.using(queue="safe").enqueue(1, 1)
    assert _ready("safe") == 1
    private.client().config_set("appendonly", "no")
    client = get_client()
    client.connection_pool.disconnect()  # every connection: the next call reconnects (new sockets)
    with pytest.raises(ConfigurationError, match="nothing was written"):
        jobs.add.using(queue="safe").enqueue(2, 2)
    assert _ready("safe") == 1
