"""The Valkey client emq uses, built from settings; an embedded Valkey when no URL is set."""

from __future__ import annotations

import contextlib
import threading
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from ..errors import ConfigurationError, ServerFull, ServerUnavailable
from . import config, embedded, faults

_lock = threading.Lock()
CONNECT_TIMEOUT = 5.0  # seconds
_clients: dict[tuple[str, bool], Any] = {}


def mask(url: str) -> str:
    """The URL with its password replaced by ``***``, fit for an error message or a log."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    user = parts.username or ""
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return urlunsplit(parts._replace(netloc=f"{user}:***@{host}"))


def data_dir() -> Path:
    """The embedded Valkey's folder: EMQ_DATA_DIR, else ``.emq`` beside the project."""
    folder = config.get("EMQ_DATA_DIR")
    return Path(folder) if folder else Path.cwd() / ".emq"


def server_url() -> str:
    """EMQ_URL as redis-py reads it (``client_url``), or the URL of the embedded Valkey (started when none answers)."""
    url = config.get("EMQ_URL")
    if url:
        return client_url(url)
    return embedded.start(data_dir())


def get_client() -> Any:
    """The shared client for the configured server (thread-safe; one pool per process)."""
    key = config.memo("client", _client_key)
    client = _clients.get(key)
    if client is None:
        with _lock:
            client = _clients.get(key)
            if client is None:
                with guard():  # a cluster client connects as it is built
                    client = _clients[key] = _connect(server_url(), key[1])
    return client


def _client_key() -> tuple[str, bool]:
    return config.get("EMQ_URL") or f"embedded:{data_dir()}", bool(config.get("EMQ_CLUSTER"))


SCHEMES = {"redis": "redis", "rediss": "rediss", "unix": "unix", "valkey": "redis", "valkeys": "rediss"}


def client_url(url: str) -> str:
    """The URL as redis-py reads it: ``valkey://`` is ``redis://``, ``valkeys://`` (TLS) is ``rediss://``."""
    scheme, sep, rest = url.partition("://")
    if not sep or scheme.lower() not in SCHEMES:
        raise ConfigurationError(f"EMQ_URL {mask(url)!r} is not a redis://, rediss://, valkey://, valkeys:// or "
                                 "unix:// URL: e.g. EMQ_URL=valkey://127.0.0.1:6379/0")
    return f"{SCHEMES[scheme.lower()]}://{rest}"


def _connect(url: str, cluster: bool, **extra: Any) -> Any:
    # A server that does not answer a connect (a host down, a firewall dropping packets) is an error
    # after CONNECT_TIMEOUT, not after the operating system's minutes.
    opts = {"decode_responses": True, "health_check_interval": 30, "socket_keepalive": True,
            "socket_connect_timeout": CONNECT_TIMEOUT, **extra}
    if not config.get("EMQ_URL"):  # the embedded Valkey: each connect reads its port file (a restart may move it)
        opts.update(embedded.following(data_dir()))
    if cluster:
        return redis.RedisCluster.from_url(url, **opts)
    return redis.Redis.from_url(url, **opts)


def new_client(block: float = 0.0) -> Any:
    """A client with its own connections, for a thread that blocks (a parked worker, a Pump).

    redis-py reads with a 5 s socket timeout by default: a blocking pop of up to ``block``
    seconds needs a longer one, or every long park ends in a TimeoutError and a reconnect.
    It never retries by itself: its thread's loop handles errors, and on a cluster a retry would
    reconnect and block again after ``disconnect`` closed the sockets to stop it.
    """
    extra = {"socket_timeout": block + 5.0} if block > 0 else {}
    with guard():  # a cluster client connects as it is built: an absent node is an outage, not a crash
        return _connect(server_url(), bool(config.get("EMQ_CLUSTER")), retry=Retry(NoBackoff(), 0), **extra)


def own_client() -> Any:
    """A client of one connection that one thread alone uses for its round trips (the worker's loop).

    A shared pool hands out a connection under a lock and polls it for unread data, then records
    its return: a system call that gives up the GIL, and a worker's loop waits behind its job threads
    to get it back on every round trip. This connection is handed out as it is: its only caller
    reads every reply or disconnects it (``wire.exchange``, ``wire.Line``). None on a cluster: its client serves.
    """
    client = get_client()
    if not isinstance(client, redis.Redis):
        return None
    return redis.Redis(connection_pool=_OneConnection(client.connection_pool))


class _OneConnection(redis.ConnectionPool):
    """The pool of ``own_client``: one connection, made (and checked) once, kept between calls."""

    def __init__(self, shared: redis.ConnectionPool) -> None:
        super().__init__(connection_class=shared.connection_class, max_connections=1, **shared.connection_kwargs)
        self._one: Any = None

    def get_connection(self, *args: Any, **kwargs: Any) -> Any:
        if self._one is None:
            self._one = super().get_connection()
        return self._one  # reconnects by itself on its next send once an error disconnected it

    def release(self, connection: Any) -> None:
        """Keep it: nothing else takes it, and it was left clean (every reply read, or disconnected)."""


def disconnect(client: Any) -> None:
    """Close a client's sockets, cutting short a blocking pop another thread waits in (cluster or not)."""
    if isinstance(client, redis.RedisCluster):
        client.disconnect_connection_pools()
    else:
        client.connection_pool.disconnect()


def forget() -> None:
    """Drop cached clients without closing them (a forked child: the sockets are its parent's too)."""
    _clients.clear()


def reset() -> None:
    """Forget cached clients, e.g. when settings change in tests (also set directly, without a signal)."""
    config.changed()
    with _lock:
        for client in _clients.values():
            with contextlib.suppress(Exception):
                client.close()
        _clients.clear()


class _Guard:
    """``guard()``'s context manager: a class, not a generator, as it wraps every call on the hot
    paths (a generator-based one costs a frame and a generator each). Stateless, so one instance serves all."""

    __slots__ = ()

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: Any, exc: BaseException | None, tb: Any) -> bool:
        if exc is None or not isinstance(exc, (redis.RedisError, redis.exceptions.RedisClusterException)):
            return False
        if fault := faults.misconfigured(exc):
            raise _refused(exc, fault) from None
        state = faults.classify(exc)
        if state is None:
            return False  # a fault of the call itself: it propagates as it is
        raise _unavailable(exc, state) from None


_GUARD = _Guard()


def guard() -> _Guard:
    """Turn the server's states (unreachable, full, loading, read-only, busy...) into ServerUnavailable
    or ServerFull, naming the server and what to do (``faults``); what the server refuses in EMQ_URL
    (a wrong password, no such database) into ConfigurationError; a fault of the call propagates."""
    return _GUARD


def _where() -> str:
    return mask(config.get("EMQ_URL") or f"embedded Valkey in {data_dir()}")


def _refused(exc: Exception, fault: str) -> ConfigurationError:
    reason = str(exc.__cause__ if fault == "auth" and exc.__cause__ else exc).rstrip(". ")
    return ConfigurationError(f"Valkey at {_where()} refused the connection ({reason}): {faults.MISCONFIGURED[fault]}.")


def _unavailable(exc: Exception, state: str = "unreachable") -> ServerUnavailable:
    url = _where()
    reason = str(exc).rstrip(". ")
    if state == "unreachable":
        advice = faults.advice(state)
        return ServerUnavailable(f"cannot reach Valkey at {url}: {reason}. {advice[0].upper()}{advice[1:]}.")
    kind = ServerFull if state == "full" else ServerUnavailable
    return kind(f"Valkey at {url} refused the call ({reason}): {faults.advice(state)}.", state)
