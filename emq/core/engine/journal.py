"""A durable job's journal on one queue (``emq/lua/journal_*.lua``, ``signal.lua``): read it once a
run, write its entries under the attempt's token, deliver signals, read the outcomes of children.
The layout of the entries is ``emq.core.journal``'s.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from .. import encrypted, journal, sealed, stored
from ..connection import guard
from .base import MAX_BATCH, Ops


class Journal(NamedTuple):
    """What ``journal_read`` found: the server's ms and the job's entries."""

    now_ms: int
    fields: dict[str, str]


class Ended(NamedTuple):
    """A child's outcome as its parent reads it: state "" when the job does not exist."""

    state: str
    result: str  # JSON ("null" when none)
    reason: str  # why it ended, when not completed: its last error's first line, else its reason


class JournalOps(Ops):
    """The journal scripts of one physical queue."""

    def read(self, job_id: str) -> Journal:
        """A job's journal entries and the server's clock, in one round trip."""
        r = self._run("journal_read", [job_id])
        return Journal(int(r[0]), journal.entries(r[1:]))

    def put(self, job_id: str, token: int, field: str, json: str, child: str = "") -> tuple[str, str]:
        """Record an entry (field "": none) and/or a child about to be spawned, under the attempt's token.

        ("ok", the stored value) — the first write's when the field was there — or ("stale" | "cancelled"
        | "missing", "") when the attempt no longer holds the job.
        """
        status, stored = self._run("journal_put", [job_id, int(token), field, json, child])
        return status, stored

    def signal(self, job_id: str, name: str, payload: str) -> str:
        """Deliver a signal: "ok" (taken), "sent" (one of that name came before), "late" (the wait timed
        out), "missing", or the state of a job that had ended.

        An encrypted job keeps the payload sealed, as its step results (``journal.value`` opens it). The script
        tells: it refuses a plain payload to an encrypted job ("encrypted"), which is then sent again sealed;
        a plain job's signal stays one call.
        """
        status = self._run("signal", [job_id, name, payload, sealed.MARK])
        if status == "encrypted":
            status = self._run("signal", [job_id, name, encrypted.seal_result(payload), ""])
        return status

    def ended(self, ids: Sequence[str]) -> list[Ended]:
        """The outcomes of jobs of this queue (a parent's children), a pipelined round trip per MAX_BATCH."""
        out: list[Ended] = []
        with guard():
            for start in range(0, len(ids), MAX_BATCH):
                rows = stored.read_raw(self.client, [self.keys.job(i) for i in ids[start : start + MAX_BATCH]],
                                       ("state", "result", "reason", "error"))
                for row in rows:
                    if isinstance(row, Exception):  # a key that holds no job
                        raise row
                    state, result, reason, error = row
                    error = encrypted.open_text(error or "")  # an encrypted child's: opened, as its result
                    out.append(Ended(state or "", encrypted.open_result(result or "null"),
                                     error.split("\n", 1)[0] or reason or ""))
        return out
