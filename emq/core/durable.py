"""EMQ_DURABLE: an enqueue returns only once its jobs survive a crash (fsync) or a failover (replica).

Valkey acknowledges a write once it is in memory; the AOF reaches the disk up to a second later
and a replica a moment later, so a crash or a failover in between loses an acknowledged job. With
EMQ_DURABLE set, each pipelined round trip of mint scripts ends with one more command on the
same connection (``fenced.run``; WAIT and WAITAOF count only their own connection's
writes): a bulk enqueue of 10,000 jobs waits once, not per job.

* ``"fsync"``: ``WAITAOF 1 0 <ms>``, the writes are in the server's AOF on its disk. Needs
  WAITAOF (Valkey, Redis >= 7.2) and ``appendonly yes``; with ``appendfsync everysec`` each wait
  lasts until the next fsync (~100 ms), with ``always`` about nothing.
* ``"replica"``: ``WAIT 1 <ms>``, a replica holds the writes. What a failover promotes is the
  replica's memory, so this is what keeps a job through it (``WAITAOF 0 1`` would also need AOF
  on the replica); WAIT exists on every server emq supports.

A confirmation that does not come within EMQ_DURABLE_TIMEOUT raises ``NotDurable``: the jobs
were written, but may be lost. Limit: a master without a replica in sync (e.g. a replica just
promoted, before its old master returns as its replica) refuses every "replica" enqueue.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from typing import Any

from ..errors import ConfigurationError, NotDurable
from . import config

MODES = ("fsync", "replica")
_has_waitaof: weakref.WeakSet = weakref.WeakSet()  # clients whose server answered WAITAOF once


def fence(client: Any) -> tuple[Any, ...] | None:
    """The command that closes each mint round trip under EMQ_DURABLE, or None when it is off."""
    mode = config.get("EMQ_DURABLE") or ""
    if not mode:
        return None
    if mode not in MODES:
        raise ConfigurationError(f"EMQ_DURABLE must be one of {MODES} or empty, not {mode!r}")
    ms = max(1, int(float(config.get("EMQ_DURABLE_TIMEOUT")) * 1000))
    if mode == "replica":
        return ("WAIT", 1, ms)
    _check_waitaof(client)
    return ("WAITAOF", 1, 0, ms)


def _check_waitaof(client: Any) -> None:
    """Refuse "fsync" before anything is written on a server without WAITAOF (Redis < 7.2)."""
    if client in _has_waitaof:
        return
    try:
        client.execute_command("WAITAOF", 0, 0, 1)
    except Exception as exc:
        if "unknown command" not in str(exc).lower():
            raise
        raise ConfigurationError(
            "EMQ_DURABLE='fsync' needs the WAITAOF command (Valkey, or Redis 7.2 and later); this server does "
            f"not know it ({exc}). Use EMQ_DURABLE='replica' (WAIT) or upgrade the server."
        ) from None
    _has_waitaof.add(client)


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
