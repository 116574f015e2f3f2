"""Fixtures: a real server for every engine test — the embedded Valkey, and EMQ_TEST_URL too.

Each test gets its own key prefix (never FLUSHALL), so the suite can share a server with
anything else that runs on it.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from emq import embedded

pytest_plugins = ["emq.testing"]  # emq_isolated, emq_server_url: the helpers users get too


def _server_params() -> list[str]:
    params = ["embedded"]
    if os.environ.get("EMQ_TEST_URL"):
        params.append("url")
    return params


@pytest.fixture(scope="session")
def embedded_url():
    """One embedded Valkey for the whole session, in a temp folder, without persistence."""
    folder = Path(tempfile.mkdtemp(prefix="emq-test-valkey-"))
    url = embedded.start(folder, persist=False)
    yield url
    embedded.stop(folder)
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="session", params=_server_params())
def server_url(request):
    """The server a test runs against: the embedded Valkey, then EMQ_TEST_URL when set."""
    if request.param == "embedded":
        return request.getfixturevalue("embedded_url")
    return os.environ["EMQ_TEST_URL"]


@pytest.fixture
def emq_server_url(server_url):
    """emq.testing's fixtures use the suite's servers (the user-facing default is the configured one)."""
    return server_url


@pytest.fixture
def emq_env(server_url, emq_isolated):
    """Point emq at the test server under a fresh key prefix (emq.testing's ``emq_isolated``)."""
    return {"EMQ_URL": server_url, "EMQ_PREFIX": emq_isolated}


@pytest.fixture
def client(emq_env):
    from emq.connection import get_client

    return get_client()
