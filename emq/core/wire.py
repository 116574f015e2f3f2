"""One round trip on one connection of a plain client: commands packed by hiredis, every reply read.

The scripts' pipelines (``scripts.run_many``, ``run_fenced``) go through ``exchange`` rather than
redis-py's Pipeline object or its command path: on the hot paths (an enqueue, a worker's round
trip every ~10 jobs) building, executing and resetting those cost more CPU than the jobs did.

Connections are handed from one exchange to the next without the pool: redis-py 8's checkout and
release (a lock, four metric calls, an event, a poll) cost an enqueue more CPU than building its
job. Each connection came from the client's pool, which still closes it on ``disconnect`` (the
next exchange reconnects it); like the pool, an exchange first drops a connection that has
something to read (a reply left over, or the server closed it). A forked child starts afresh.
"""

from __future__ import annotations

import collections
import contextlib
import os
import threading
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from redis.exceptions import ConnectionError, DataError, ResponseError, TimeoutError
from redis.utils import HIREDIS_AVAILABLE

if HIREDIS_AVAILABLE:  # what redis-py packs with too, minus its per-argument Python pass
    from hiredis import pack_command as _hiredis_pack
else:
    _hiredis_pack = None

IDLE = "_emq_idle"  # attribute of a plain client: (fork count when made, its idle connections)
_lock = threading.Lock()
_forks = 0  # forks this process came through: a child must not use its parent's sockets


def _forked() -> None:
    global _forks, _lock
    _forks += 1
    _lock = threading.Lock()  # a parent's thread may have held it at the fork


os.register_at_fork(after_in_child=_forked)


def exchange(client: Any, commands: Sequence[tuple[Any, ...]], meanwhile: Callable[[], None] | None = None,
             ready: Callable[[Any], None] | None = None) -> list[Any]:
    """Send commands on one connection of a plain client and read every reply (errors as values).

    ``meanwhile`` is called once the commands are on the wire, before their replies are read (client
    work that overlaps the server's; it must not raise). ``ready(conn)`` is called with the connection
    before anything is sent on it, and may refuse by raising (EMQ_DURABLE's probe)."""
    conn = _checkout(client)
    try:
        if _stale(conn):
            conn.disconnect()  # sending reconnects it
        if ready is not None:
            ready(conn)
        conn.send_packed_command(pack(conn, commands))
        if meanwhile is not None:
            meanwhile()
        replies: list[Any] = []
        for _ in commands:
            try:
                replies.append(conn.read_response())
            except ResponseError as exc:  # read every reply, so the connection stays in step
                replies.append(exc)
    except BaseException:
        conn.disconnect()
        raise
    finally:
        _checkin(client, conn)
    return replies


def stream(client: Any, commands: Iterable[tuple[Any, ...]], depth: int, each: Callable[[Any], None]) -> None:
    """Send commands on one connection of a plain client with up to depth of them unanswered, and
    hand each reply, in order, to each (errors as values; it must not raise).

    The server runs one command while the next waits in its buffer and the client packs the one
    after: neither side waits for the other, as a round trip of a whole batch makes them do.
    commands is read lazily, so a caller can stop it (a generator that returns) on a bad reply."""
    conn = _checkout(client)
    try:
        if _stale(conn):
            conn.disconnect()  # sending reconnects it
        unanswered = 0
        for command in commands:
            conn.send_packed_command(pack(conn, [command]))
            unanswered += 1
            if unanswered >= depth:
                each(_reply(conn))
                unanswered -= 1
        for _ in range(unanswered):
            each(_reply(conn))
    except BaseException:
        conn.disconnect()
        raise
    finally:
        _checkin(client, conn)


def _reply(conn: Any) -> Any:
    try:
        return conn.read_response()
    except ResponseError as exc:  # a reply like any other: the connection stays in step
        return exc


def pack(conn: Any, commands: Sequence[tuple[Any, ...]]) -> Any:
    """The commands in RESP. hiredis straight away when redis-py packs with it: redis-py first
    copies every argument through a generator, a mint's many of them on every call of the hot paths."""
    if _hiredis_pack is None:
        return conn.pack_commands(commands)
    try:
        return [b"".join([_hiredis_pack(c) for c in commands])]
    except TypeError as exc:  # what redis-py raises for an argument it cannot send
        raise DataError(str(exc)) from None


def _stale(conn: Any) -> bool:
    """Whether a connection has something to read before anything was sent: it is out of step or closed."""
    try:
        return bool(conn.can_read())
    except (ConnectionError, TimeoutError, OSError):
        return True


def _checkout(client: Any) -> Any:
    held = client.__dict__.get(IDLE)
    if held is not None and held[0] == _forks:
        with contextlib.suppress(IndexError):
            return held[1].pop()
    return client.connection_pool.get_connection()


def _checkin(client: Any, conn: Any) -> None:
    held = client.__dict__.get(IDLE)
    if held is None or held[0] != _forks:
        with _lock:
            held = client.__dict__.get(IDLE)
            if held is None or held[0] != _forks:
                held = client.__dict__[IDLE] = (_forks, collections.deque())
    held[1].append(conn)  # deque.append and .pop are atomic: threads share it without a lock


class Line:
    """One connection of a plain client, held by one thread while its requests are in flight: each is
    sent at once and its replies read later, oldest first (``read``). The worker's loop sends its next
    round trip before it reads the last one, so the server runs one while the loop handles the other.

    The connection goes back to the client once nothing is in flight: any other call on the client
    (which may have this one connection only, ``connection.own_client``) waits until then.
    ``settle`` reads every request still in flight ahead of time, for a caller that must use the
    client at once (a script to load and run again). An error drops every request in flight.
    """

    def __init__(self, client: Any) -> None:
        self.client = client
        self.conn: Any = None
        self.flying: collections.deque[int] = collections.deque()  # replies each request in flight awaits
        self.early: collections.deque[list[Any]] = collections.deque()  # replies read ahead (``settle``)

    def __len__(self) -> int:
        return len(self.flying) + len(self.early)

    def send(self, commands: Sequence[tuple[Any, ...]]) -> None:
        if self.conn is None:
            self.conn = _checkout(self.client)
            if _stale(self.conn):
                self.conn.disconnect()  # sending reconnects it
        try:  # no health check behind a reply in flight: its PING would read that reply as its own
            self.conn.send_packed_command(pack(self.conn, commands), check_health=not self.flying)
        except BaseException:
            self.drop()
            raise
        self.flying.append(len(commands))

    def read(self) -> list[Any]:
        """The replies of the oldest request in flight (errors as values)."""
        if self.early:
            return self.early.popleft()
        return self._read_flying()

    def settle(self) -> None:
        """Read the replies of every request in flight now (``read`` hands them out in order later)."""
        while self.flying:
            self.early.append(self._read_flying())

    def _read_flying(self) -> list[Any]:
        n = self.flying.popleft()
        try:
            replies = [_reply(self.conn) for _ in range(n)]
        except BaseException:
            self.drop()
            raise
        if not self.flying:
            _checkin(self.client, self.conn)
            self.conn = None
        return replies

    def drop(self) -> None:
        """Forget every request in flight: close the connection (its replies would answer the next)."""
        self.flying.clear()
        self.early.clear()
        if self.conn is not None:
            self.conn.disconnect()
            _checkin(self.client, self.conn)
            self.conn = None
