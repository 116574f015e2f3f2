"""EMQ_DURABLE: an enqueue returns only once its jobs survive a crash (fsync) or a failover (replica).

Valkey acknowledges a write once it is in memory; the AOF reaches the disk up to a second later
and a replica a moment later, so a crash or a failover in between loses an acknowledged job. With
EMQ_DURABLE set, each pipelined round trip of mint scripts ends with one more command on the
same connection (``fenced.run``; WAIT and WAITAOF count only their own connection's
writes): a bulk enqueue of 10,000 jobs waits once, not per job.

* ``"fsync"``: ``WAITAOF 1 0 <ms>``, the writes are in the server's AOF on its disk. Needs
  WAITAOF (Valkey, Redis >= 7.2) and ``appendonly yes``; with ``appendfsync everysec`` each wait
  lasts until the next fsync, with ``always`` about nothing.
* ``"replica"``: ``WAIT 1 <ms>``, a replica holds the writes. What a failover promotes is the
  replica's memory, so this is what keeps a job through it (``WAITAOF 0 1`` would also need AOF
  on the replica); WAIT exists on every server emq supports.

Each mode is probed on a connection before the first script is sent on it (``probe``): a server
that cannot give the guarantee refuses the enqueue before anything is written, so a caller that
retries never duplicates jobs. "fsync": ``WAITAOF 1 0 1`` errs without WAITAOF (Redis < 7.2) or
without ``appendonly``; "replica": ``WAIT 1 <timeout>`` on a connection that has written nothing
answers at once with the replicas attached, 0 when none is. A probe that passes is kept for the
connection's socket: a reconnect (a restarted server may run without AOF now) probes again.

A confirmation that does not come within EMQ_DURABLE_TIMEOUT raises ``NotDurable``: the jobs
were written, but may be lost. Limit: a master whose replica is attached but not in sync (e.g. a
replica just promoted, before its old master returns as its replica) passes the probe and refuses
every "replica" enqueue after writing it. docs/guides/failure-modes.md says what each mode (and the
default, none) lets an acknowledged enqueue survive.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from typing import Any

from ..errors import ConfigurationError, NotDurable
from . import config

MODES = ("fsync", "replica")
# mode -> the sockets whose server passed that mode's probe; a reconnect makes a new socket.
_probed: dict[str, weakref.WeakSet] = {mode: weakref.WeakSet() for mode in MODES}


def fence(client: Any) -> tuple[Any, ...] | None:
    """The command that closes each mint round trip under EMQ_DURABLE, or None when it is off."""
    mode = config.get("EMQ_DURABLE") or ""
    if not mode:
        return None
    if mode not in MODES:
        raise ConfigurationError(f"EMQ_DURABLE must be one of {MODES} or empty, not {mode!r}")
    if mode == "replica":
        return ("WAIT", 1, _timeout_ms())
    return ("WAITAOF", 1, 0, _timeout_ms())


def probe(conn: Any) -> None:
    """Refuse, before anything is sent on conn, a server that cannot give EMQ_DURABLE's guarantee;
    once a connection's socket passed, it is not asked again (``fenced.run`` calls this)."""
    mode = config.get("EMQ_DURABLE")
    if conn._sock is None:
        conn.connect()
    if conn._sock in _probed[mode]:
        return
    command = ("WAIT", 1, _timeout_ms()) if mode == "replica" else ("WAITAOF", 1, 0, 1)
    conn.send_command(*command)
    try:
        reply = conn.read_response()
    except Exception as exc:
        raise _refusal(mode, exc) from None
    if mode == "replica" and int(reply) < 1:
        raise NotDurable(
            "EMQ_DURABLE='replica': the server has no replica attached (WAIT 1 answered 0 within "
            f"{config.get('EMQ_DURABLE_TIMEOUT')} s); nothing was written. Attach a replica (INFO replication) "
            "or unset EMQ_DURABLE."
        )
    _probed[mode].add(conn._sock)


def _refusal(mode: str, exc: Exception) -> Exception:
    text = str(exc)
    if "unknown command" in text.lower():
        return ConfigurationError(
            "EMQ_DURABLE='fsync' needs the WAITAOF command (Valkey, or Redis 7.2 and later); this server does "
            f"not know it ({text}); nothing was written. Use EMQ_DURABLE='replica' (WAIT) or upgrade the server."
        )
    if "appendonly" in text:
        return ConfigurationError(
            f"EMQ_DURABLE='fsync' needs the server's AOF, and it runs without it ({text}); nothing was written. "
            "Turn appendonly on (CONFIG SET appendonly yes, and in its config file), or unset EMQ_DURABLE."
        )
    return exc


def _timeout_ms() -> int:
    return max(1, int(float(config.get("EMQ_DURABLE_TIMEOUT")) * 1000))


def confirm(replies: Sequence[Any], queue: str, jobs: int, before: int) -> None:
    """Raise unless every fence reply of a round trip of ``jobs`` jobs confirms them."""
    mode = config.get("EMQ_DURABLE")
    for reply in replies:
        if isinstance(reply, Exception):
            raise ConfigurationError(
                f"EMQ_DURABLE={mode!r}: the server refused to confirm ({reply}); "
                f"{_written(queue, jobs, before)}. Turn appendonly on for 'fsync', or unset EMQ_DURABLE."
            )
        got = reply[0] if isinstance(reply, list) else reply
        if int(got) < 1:
            where = "on the server's disk (WAITAOF 1 0)" if mode == "fsync" else "by a replica (WAIT 1)"
            raise NotDurable(
                f"EMQ_DURABLE={mode!r}: not confirmed {where} within {config.get('EMQ_DURABLE_TIMEOUT')} s; "
                f"{_written(queue, jobs, before)}: a crash or failover now may lose them. Check the server's "
                "replicas (INFO replication) or raise EMQ_DURABLE_TIMEOUT; re-enqueue with the same job_id to be sure."
            )


def _written(queue: str, jobs: int, before: int) -> str:
    done = f" ({before} before them were confirmed)" if before else ""
    return f"{jobs} jobs of queue {queue!r} were written but are not confirmed{done}"
