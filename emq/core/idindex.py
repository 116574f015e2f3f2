"""Where a job of a caller-chosen id lives: ``job_id="welcome-42"`` -> its queue (DESIGN rule 13).

A generated id names its queue (``ids``); an id a caller chose does not. So each mint of one also
notes its physical queue in the entry ``<prefix>:id:<id>``, a set: ``SADD`` and ``PEXPIRE``, sent
by the client in the round trip of the mint, after it. Not inside the mint's script: on a cluster
the entry lies in the id's own slot, and a script touches one slot. A set, not a string: an id
reused in two queues is seen as such, and the lookup asks which one is meant. An entry is beside
the queues, as the registry of queue names is, never touched by a queue's scripts.

An entry lives as long as its job can: the due delay, a day for the wait and the run, then the
longer retention (EMQ_RESULT_TTL, EMQ_DEAD_TTL). It is a hint, never the truth: a lookup checks
that the job is there (``core.locate``), and one the entry no longer points to (deleted, trimmed,
an entry expired first, the entry's write lost with the connection) is found by asking every
known queue. Each note sets the TTL afresh, so a later mint of a reused id may shorten it, with
the same fallback; the client's clock only shapes this TTL (a day of slack), never a due time.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

from . import config, keys

SLACK_MS = 24 * 3600 * 1000  # a job's wait for a worker and its run, beyond its due time


def notes(prefix: str, queue: str, chosen: Iterable[tuple[str, str]]) -> list[tuple[Any, ...]]:
    """The commands that note the physical queue of jobs of caller-chosen ids, given as (id, due spec)."""
    out: list[tuple[Any, ...]] = []
    keep = None
    for job_id, due in chosen:
        keep = keep or SLACK_MS + 1000 * int(max(config.get("EMQ_RESULT_TTL"), config.get("EMQ_DEAD_TTL")))
        key = keys.job_index(prefix, job_id)
        out += [("SADD", key, queue), ("PEXPIRE", key, keep + _delay_ms(due))]
    return out


def _delay_ms(due: str) -> int:
    """How far ahead a due spec is: "" now, "+<ms>", "@<epoch ms>" (by this client's clock: see above)."""
    if due.startswith("+"):
        return max(int(due[1:]), 0)
    if due.startswith("@"):
        return max(int(due[1:]) - int(time.time() * 1000), 0)
    return 0


def ask(pipe: Any, prefix: str, job_id: str) -> None:
    """Queue on a pipeline the read of an id's entry (its reply: the physical queues noted, a set)."""
    pipe.smembers(keys.job_index(prefix, job_id))
