"""Cancels pushed to the worker: a running job hears of its cancel within milliseconds, not at its renewal.

cancel.lua publishes the running jobs it cancelled, [[id, token], ...], on its queue's sharded channel
(SPUBLISH ``<prefix>:{<queue>}:cancels``: in the queue's own slot, so on a cluster the message stays on
the node that serves the queue). A worker subscribes to its queues' channels (SSUBSCRIBE) on one
connection per node that serves them (one on a plain server), each read by one thread, and hands what
it hears to ``on_cancel`` (``Leases.heard``), which stops a job it holds as the renewal's "cancelled"
answer does, a job claimed and not started yet (a prefetched one) included: it never starts.

No polling: a subscriber sends nothing while nothing is cancelled (no health check PINGs; a dead peer
shows as a read error, TCP keepalive finds a silent one). Delivery is at most once: a message published
while a subscription is down (a restart, a failover, a slot moving to another node, which unsubscribes
us) is lost, and that cancel reaches the job at its next renewal instead, as before. Every such break
rebuilds all subscriptions from the cluster's current map, after a short pause.
"""

from __future__ import annotations

import json
import logging
import random
import threading
from collections.abc import Callable, Sequence
from typing import Any

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from ..core.connection import get_client
from ..core.engine import Queue
from .outage import Outage

log = logging.getLogger("emq.worker")
READ_WAIT = 60.0  # seconds a read waits for a message before it looks again (a local wait: nothing is sent)
Heard = Callable[[str, list[tuple[str, int]]], None]  # (physical queue, [(job id, token), ...])


class CancelListener:
    """The subscriptions of one worker to its queues' cancel channels, and the threads that read them."""

    def __init__(self, queues: Sequence[Queue], heard: Heard) -> None:
        self.channels = {q.keys.cancels: q.name for q in queues}
        self.heard = heard
        self.closed = False
        self.refused = False  # the server will never take the subscription: the renewals alone carry cancels
        self.broken = threading.Event()  # a subscription failed or was moved: rebuild them all
        self.subs: list[Any] = []
        self._lock = threading.Lock()
        self.outage = Outage(log, "listening for cancels")
        self.thread = threading.Thread(target=self.run, name="emq-cancels", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def close(self) -> None:
        """Stop: cut every read short by closing its connection."""
        self.closed = True
        self.broken.set()
        self._drop()
        if self.thread.is_alive():
            self.thread.join(timeout=2)

    def run(self) -> None:
        while not (self.closed or self.refused):
            self.broken.clear()
            try:
                subs = self._subscribe()
            except Exception as exc:  # the server is away: the renewals still carry cancels meanwhile
                self._drop()
                if self.closed or self._refuses(exc):
                    return
                self.outage.failed(exc)
                _refresh()
                self.broken.wait(random.uniform(0.5, 1.0))
                continue
            self.outage.ok()
            others = [threading.Thread(target=self._read, args=(s,), name="emq-cancels", daemon=True) for s in subs[1:]]
            for t in others:
                t.start()
            self._read(subs[0])
            self._drop()
            for t in others:
                t.join(timeout=2)
            if not (self.closed or self.refused):
                self.broken.wait(random.uniform(0.2, 0.5))  # a failover or a slot moving: let the map settle
                _refresh()

    def _refuses(self, exc: Exception) -> bool:
        """The server will never take the subscription (an ACL user without channels, no sharded pub/sub):
        say so once; the renewals carry the cancels."""
        if not (isinstance(exc, redis.exceptions.NoPermissionError) or "unknown command" in str(exc).lower()):
            return False
        log.warning("cancels reach running jobs at their lease renewal only: the server refused SSUBSCRIBE (%s); "
                    "allow the user the channels %s (ACL &<pattern>) to have them at once", exc,
                    ", ".join(self.channels))
        self.refused = True
        return True

    def _subscribe(self) -> list[Any]:
        """One subscribed PubSub per node serving the channels (the cluster's map read afresh)."""
        pools: dict[tuple, tuple[Any, list[str]]] = {}
        client = get_client()
        for channel in self.channels:
            pool = _pool_of(client, channel)
            pools.setdefault(_where(pool), (pool, []))[1].append(channel)
        subs = []
        for pool, channels in pools.values():
            sub = _subscriber(pool)
            with self._lock:
                self.subs.append(sub)
            if self.closed:
                break
            for channel in channels:  # one slot a command: a cluster node refuses channels of two slots
                sub.ssubscribe(channel)
            subs.append(sub)
        if not subs:
            raise ConnectionError("closed")
        return subs

    def _read(self, sub: Any) -> None:
        """Hand on what one subscription hears until it breaks, is moved, or the listener closes."""
        while not (self.closed or self.broken.is_set()):
            try:
                msg = sub.get_message(timeout=READ_WAIT)
            except Exception as exc:  # a subscription refused shows here: its reply is read with the messages
                if not (self.closed or self._refuses(exc)):
                    self.outage.failed(exc)
                break
            if msg is None:
                continue
            if msg["type"] == "smessage":
                self._hand_on(msg["channel"], msg["data"])
            elif msg["type"] == "sunsubscribe":  # its slot moved to another node
                break
        self.broken.set()

    def _hand_on(self, channel: str, data: str) -> None:
        try:
            items = [(str(i), int(t)) for i, t in json.loads(data)]
        except (ValueError, TypeError):
            log.warning("a cancel message on %s is not [[id, token], ...]: %r", channel, data[:200])
            return
        try:
            self.heard(self.channels[channel], items)
        except Exception:  # never let a job's stop end the listener
            log.exception("stopping cancelled jobs of %s failed", self.channels.get(channel))

    def _drop(self) -> None:
        with self._lock:
            subs, self.subs = self.subs, []
        for sub in subs:
            try:
                if sub.connection is not None:
                    sub.connection.disconnect()  # shuts the socket down: a read blocked in it returns
                sub.reset()
            except Exception:  # closing a socket another thread reads may raise; it is closed anyway
                pass


def _pool_of(client: Any, channel: str) -> Any:
    """The connection pool of the node that serves channel's slot (the client's own on a plain server)."""
    if isinstance(client, redis.RedisCluster):
        return client.get_node_from_key(channel).redis_connection.connection_pool
    return client.connection_pool


def _refresh() -> None:
    """Read the cluster's map of slots to nodes again (a failover or a migration changed it)."""
    client = get_client()
    if isinstance(client, redis.RedisCluster):
        try:
            client.nodes_manager.initialize()
        except Exception:  # no node answers yet: the next subscribe fails and comes back here
            pass


def _where(pool: Any) -> tuple:
    kw = pool.connection_kwargs
    return kw.get("host"), kw.get("port"), kw.get("path")


def _subscriber(pool: Any) -> Any:
    """A PubSub on a connection of its own to the pool's server: no health check PINGs, no retries, no
    read timeout (a read waits READ_WAIT, locally)."""
    kwargs = {**pool.connection_kwargs, "health_check_interval": 0, "socket_timeout": None,
              "retry": Retry(NoBackoff(), 0)}
    own = redis.ConnectionPool(connection_class=pool.connection_class, max_connections=1, **kwargs)
    return redis.Redis(connection_pool=own).pubsub()
