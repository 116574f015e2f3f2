"""Fixtures: a real server for every engine test — the embedded Valkey, EMQ_TEST_URL too, and
a local 3-master Valkey Cluster when EMQ_TEST_CLUSTER=1.

Each test gets its own key prefix (never FLUSHALL), so the suite can share a server with
anything else that runs on it.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from emq.core import embedded

pytest_plugins = ["emq.testing"]  # emq_isolated, emq_server_url: the helpers users get too


def pytest_configure(config):
    """Passwords of the users tests make are hashed with a fast hasher: Django's PBKDF2 (1,000,000
    rounds) cost 3 s for the dashboard's four users on a busy 2-core machine, once a test, and a
    password's strength is no test's subject. Processes the tests start keep the project's hashers."""
    from django.conf import settings

    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def _server_params() -> list[str]:
    params = ["embedded"]
    if os.environ.get("EMQ_TEST_URL"):
        params.append("url")
    if os.environ.get("EMQ_TEST_CLUSTER") == "1":
        params.append("cluster")
    return params


@pytest.fixture(scope="session")
def embedded_url():
    """One embedded Valkey for the whole session, in a temp folder, without persistence."""
    folder = Path(tempfile.mkdtemp(prefix="emq-test-valkey-"))
    url = embedded.start(folder, persist=False)
    yield url
    embedded.stop(folder)
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="session")
def valkey_cluster():
    """One local 3-master Valkey Cluster for the whole session (tests/cluster.py)."""
    from tests import cluster

    c = cluster.start(Path(tempfile.mkdtemp(prefix="emq-test-cluster-")))
    yield c
    c.stop()


@pytest.fixture(scope="session", params=_server_params())
def server_url(request):
    """The server a test runs against: the embedded Valkey, then EMQ_TEST_URL, then the cluster."""
    if request.param == "embedded":
        return request.getfixturevalue("embedded_url")
    if request.param == "cluster":
        return request.getfixturevalue("valkey_cluster").url
    return os.environ["EMQ_TEST_URL"]


def pytest_addoption(parser):
    parser.addoption(
        "--timing", choices=["all", "skip", "only"], default="all",
        help="the tests marked timing (a wall-clock bound that other work on the cores can break): run them "
             "too (all), leave them out (skip: `make test`'s parallel part), or run only them (its serial part)",
    )


def pytest_collection_modifyitems(config, items):
    """A ``one_server`` test runs on the embedded Valkey only: the others would repeat it, not widen it.
    ``--timing`` keeps or leaves out the tests marked ``timing``."""
    timing = config.getoption("--timing")
    keep, drop = [], []
    for item in items:
        callspec = getattr(item, "callspec", None)
        other = callspec is not None and callspec.params.get("server_url", "embedded") != "embedded"
        timed = item.get_closest_marker("timing") is not None
        unwanted = (timing == "skip" and timed) or (timing == "only" and not timed)
        (drop if unwanted or (other and item.get_closest_marker("one_server")) else keep).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


def on_the_cluster(request) -> bool:
    """Whether this test runs on the local cluster (its server_url param)."""
    callspec = getattr(request.node, "callspec", None)
    return bool(callspec) and callspec.params.get("server_url") == "cluster"


@pytest.fixture
def emq_server_url(request, server_url, settings):
    """emq.testing's fixtures use the suite's servers; on the cluster param, the cluster client."""
    settings.EMQ_CLUSTER = on_the_cluster(request)
    return server_url


@pytest.fixture
def emq_env(request, emq_server_url, emq_isolated):
    """Point emq at the test server under a fresh key prefix (emq.testing's ``emq_isolated``)."""
    on_cluster = on_the_cluster(request)
    return {"EMQ_URL": emq_server_url, "EMQ_PREFIX": emq_isolated, "EMQ_CLUSTER": "true" if on_cluster else "false"}


@pytest.fixture
def client(emq_env):
    from emq.core.connection import get_client

    return get_client()
