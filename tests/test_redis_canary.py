"""A canary for every redis-py internal emq's wire relies on: a redis-py upgrade that removes or
changes one fails here, naming it, before a worker meets it in production.

emq talks to the server below redis-py's command API on its hot paths (``emq/core/wire.py``: a
round trip on a connection handed from one call to the next, packed by hiredis) and keeps a
private one-connection pool (``connection.own_client``); on a cluster it reads the slot map and
routes by hand (``owner.on_owner``, ``refresh``). pyproject.toml pins ``redis`` to the range
these checks pass on; raise its ceiling only after they pass on the new major.
"""

from __future__ import annotations

import inspect
import os

import pytest
import redis
import redis.cluster
import redis.connection
import redis.crc
import redis.exceptions
import redis.utils

from emq.core import embedded, wire
from emq.core.connection import _OneConnection
from tests.procs import wait_for


def need(ok: bool, internal: str, where: str, why: str) -> None:
    """Fail, naming the internal, the emq module that uses it and what it is used for."""
    assert ok, (
        f"redis-py {redis.__version__} breaks {internal}, which {where} relies on ({why}). Adapt {where}, "
        "or keep redis to the range pyproject.toml pins.")


def takes_no_arguments(func) -> bool:
    params = list(inspect.signature(func).parameters.values())[1:]  # past self
    return all(p.default is not p.empty or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params)


# -- what the module imports and the classes offer, without a server ----------------------


def test_hiredis_available_flag():
    need(isinstance(getattr(redis.utils, "HIREDIS_AVAILABLE", None), bool), "redis.utils.HIREDIS_AVAILABLE",
         "emq/core/wire.py", "whether to pack commands with hiredis as redis-py does")


@pytest.mark.parametrize("method", ["send_packed_command", "read_response", "pack_commands", "can_read",
                                    "disconnect", "check_health"])
def test_connection_methods(method):
    need(callable(getattr(redis.Connection, method, None)), f"Connection.{method}", "emq/core/wire.py",
         "a round trip on one connection, below the command API")


def test_send_packed_command_skips_its_health_check_on_request():
    params = inspect.signature(redis.Connection.send_packed_command).parameters
    need("check_health" in params, "Connection.send_packed_command(check_health=)", "emq/core/wire.py (Line.send)",
         "no health-check PING behind a reply in flight: it would read that reply as its own")


def test_a_pool_hands_out_a_connection_without_a_command_name():
    need(takes_no_arguments(redis.ConnectionPool.get_connection), "ConnectionPool.get_connection()",
         "emq/core/wire.py (_checkout), emq/core/connection.py (_OneConnection)", "a connection for no one command")


def test_a_pool_can_be_copied_into_a_private_one():
    asked = {"host": "127.0.0.1", "port": 1, "decode_responses": True, "socket_timeout": 7.0}
    shared = redis.ConnectionPool(**asked)
    one = _OneConnection(shared)
    kept = {k: one.connection_kwargs.get(k) for k in asked}
    need(one.connection_class is shared.connection_class and kept == asked and one.max_connections == 1,
         "ConnectionPool(connection_class=, max_connections=, **connection_kwargs)",
         "emq/core/connection.py (own_client), emq/core/libraries.py", "a private pool of the shared one's kind")


def test_a_client_keeps_instance_attributes():
    need(hasattr(redis.Redis(host="127.0.0.1", port=1), "__dict__"), "Redis.__dict__ (no __slots__)",
         "emq/core/wire.py (IDLE)", "the idle connections an exchange hands to the next, kept on the client")


@pytest.mark.parametrize("method", ["get_node_from_key", "get_redis_connection", "get_primaries",
                                    "disconnect_connection_pools", "execute_command", "pipeline"])
def test_cluster_client_methods(method):
    need(callable(getattr(redis.RedisCluster, method, None)), f"RedisCluster.{method}",
         "emq/core/scripts.py, connection.py, libraries.py", "a round trip routed to the slot's primary")


def test_cluster_client_keeps_a_nodes_manager_that_rereads_the_slot_map():
    sets_it = "self.nodes_manager =" in inspect.getsource(redis.RedisCluster.__init__)
    need(sets_it and callable(getattr(redis.cluster.NodesManager, "initialize", None)),
         "RedisCluster.nodes_manager.initialize()", "emq/core/scripts.py (refresh)",
         "re-read the slot map after a slot moved or a node died")


def test_cluster_nodes_are_named_host_port():
    need(redis.cluster.ClusterNode("10.0.0.1", 7000).name == "10.0.0.1:7000", "ClusterNode.name",
         "emq/core/libraries.py", "which primary holds which library")


def test_slots_are_computed_as_the_server_does():
    ok = redis.crc.REDIS_CLUSTER_HASH_SLOTS == 16384 and redis.crc.key_slot(b"emq:{q}:job:1") == redis.crc.key_slot(
        b"q")
    need(ok, "redis.crc.key_slot, REDIS_CLUSTER_HASH_SLOTS", "emq/core/topology.py",
         "partitions spread over the cluster's slots by hash tag")


@pytest.mark.parametrize("name", ["AskError", "BusyLoadingError", "ClusterDownError", "ClusterError",
                                  "MasterDownError", "MovedError", "NoScriptError", "OutOfMemoryError",
                                  "ReadOnlyError", "RedisClusterException", "SlotNotCoveredError", "TryAgainError"])
def test_exceptions_the_fault_table_names(name):
    need(isinstance(getattr(redis.exceptions, name, None), type), f"redis.exceptions.{name}",
         "emq/core/faults.py, scripts.py", "the server's states told apart from faults of the call")


def test_a_server_loading_its_data_is_a_connection_error():
    need(issubclass(redis.exceptions.BusyLoadingError, redis.ConnectionError), "BusyLoadingError's base class",
         "emq/core/faults.py (classify)", "tested before the generic connection case")


def test_hiredis_packs_as_redis_py_does():
    if not redis.utils.HIREDIS_AVAILABLE:
        pytest.skip("no hiredis: emq packs through redis-py itself")
    conn = redis.Connection()
    commands = [("EVALSHA", "f" * 40, 2, "emq:{q}:job:1", "emq:{q}:ring", 3, 1.5, b"\x00bytes", "é")]
    need(wire.pack(conn, commands) == [b"".join(conn.pack_commands(commands))], "Connection.pack_commands",
         "emq/core/wire.py (pack)", "hiredis.pack_command sends what redis-py would")
    with pytest.raises(redis.DataError):  # what redis-py raises for a value it cannot send
        wire.pack(conn, [("SET", "k", {"a": 1})])


# -- how they behave, on a real server -------------------------------------------------------


@pytest.fixture
def conn(embedded_url):
    c = redis.Redis.from_url(embedded_url, decode_responses=True).connection_pool.get_connection()
    yield c
    c.disconnect()


def test_sending_reconnects_a_disconnected_connection(conn):
    conn.disconnect()
    conn.send_packed_command(conn.pack_commands([("PING",)]))
    need(conn.read_response() == "PONG", "Connection.send_packed_command after disconnect()", "emq/core/wire.py",
         "a stale connection is disconnected and sending reconnects it")


def test_an_error_reply_raises_and_leaves_the_connection_in_step(conn):
    conn.send_packed_command(conn.pack_commands([("NOSUCHCOMMAND",), ("ECHO", "next")]))
    with pytest.raises(redis.ResponseError):
        conn.read_response()
    need(conn.read_response() == "next", "Connection.read_response on an error reply", "emq/core/wire.py",
         "every reply of a round trip read, errors as values")


def test_a_waiting_reply_is_seen_before_anything_is_sent(conn):
    conn.send_packed_command(conn.pack_commands([("ECHO", "left over")]))
    try:
        waiting = wait_for(lambda: wire._stale(conn), timeout=5, what="the reply seen waiting")
    except AssertionError:
        waiting = False
    conn.read_response()
    need(waiting and not conn.can_read(), "Connection.can_read", "emq/core/wire.py (_stale)",
         "a connection out of step is dropped before a round trip")


def test_the_health_check_is_skipped_on_request(conn):
    checks = []
    conn.check_health = lambda: checks.append(1)
    conn.send_packed_command(conn.pack_commands([("PING",)]), check_health=False)
    conn.read_response()
    conn.send_packed_command(conn.pack_commands([("PING",)]))
    conn.read_response()
    need(checks == [1], "Connection.send_packed_command(check_health=False)", "emq/core/wire.py (Line.send)",
         "no health-check PING behind a reply in flight")


def test_a_client_takes_and_gives_back_its_connection_through_the_pool(embedded_url):
    calls = []

    class Counting(_OneConnection):
        def get_connection(self, *args, **kwargs):
            calls.append("get")
            return super().get_connection(*args, **kwargs)

        def release(self, connection):
            calls.append("release")

    shared = redis.Redis.from_url(embedded_url, decode_responses=True).connection_pool
    client = redis.Redis(connection_pool=Counting(shared))
    try:
        client.ping()
        client.ping()
    finally:
        client.connection_pool.disconnect()
    need(calls == ["get", "release"] * 2, "Redis.execute_command's pool.get_connection / pool.release",
         "emq/core/connection.py (_OneConnection)", "the loop's one connection, kept between calls")


def test_a_connection_dials_the_port_it_holds_when_it_connects(embedded_url, tmp_path):
    """embedded.Following sets ``port`` in ``_connect``: a client of a restarted embedded server finds its new port."""
    need(takes_no_arguments(redis.Connection._connect), "Connection._connect()", "emq/core/embedded.py (Following)",
         "read the port file again at each connect")
    (tmp_path / "valkey.port").write_text(embedded_url.rsplit(":", 1)[1].split("/")[0])
    client = redis.Redis(connection_pool=redis.ConnectionPool(port=1, **embedded.following(tmp_path)))  # 1: no one
    try:
        answered = client.ping()
    finally:
        client.connection_pool.disconnect()
    need(answered, "Connection.port read by _connect", "emq/core/embedded.py (Following)",
         "read the port file again at each connect")


@pytest.mark.skipif(os.environ.get("EMQ_TEST_CLUSTER") != "1", reason="EMQ_TEST_CLUSTER=1 starts the local cluster")
def test_a_cluster_client_routes_to_the_slot_owner_and_rereads_its_map(valkey_cluster):
    client = redis.RedisCluster.from_url(valkey_cluster.url, decode_responses=True)
    try:
        client.nodes_manager.initialize()
        node = client.get_node_from_key("emq:{canary}:job:1")
        owner = client.get_redis_connection(node)
        replies = wire.exchange(owner, [("SET", "emq:{canary}:probe", "1"), ("GET", "emq:{canary}:probe")])
        owner.delete("emq:{canary}:probe")
        names = {n.name for n in client.get_primaries()}
    finally:
        client.close()
    need(isinstance(owner, redis.Redis) and replies == ["OK", "1"] and node.name in names,
         "RedisCluster.get_node_from_key / get_redis_connection / nodes_manager.initialize",
         "emq/core/owner.py (on_owner, refresh)", "a round trip on the slot owner's own client")
