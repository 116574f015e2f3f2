"""An attempt's outcome in words, from the state the finish script decided and what the job raised.

The server decides retried or dead (``finish.lua``); this only names it. An attempt that ended by
a known exception is named after it whatever the state: the engine's cancellation and time limit
errors register here (``ERROR_OUTCOMES``), so a cancelled job reads "cancelled", not "dead".
"""

from __future__ import annotations

from ..core.records import Outcome

RETRIED = ("ready", "scheduled")
# Exception paths ("module.Type", as the first line of an error text starts) -> outcome name.
ERROR_OUTCOMES: dict[str, str] = {"emq.errors.JobTimeout": "timed out", "emq.errors.Cancelled": "cancelled"}


def name(state: str, record: Outcome) -> str:
    """"completed", "retried", "dead", "stale", "missing", "timed out" or "cancelled".

    A cancelled job's own finish is refused as stale (the server cancelled it first), so its
    outcome is named from the ``Cancelled`` it raised; a timed-out attempt is retried or dead
    like any failure, and named "timed out".
    """
    if state in ("completed", "missing"):
        return state
    if record.outcome == "ratelimited" and state != "stale":
        return "rate limited"
    known = ERROR_OUTCOMES.get(record.value.split(":", 1)[0]) if record.value else None
    if known and (state != "stale" or known == "cancelled"):
        return known
    if state == "stale":
        return state
    return "retried" if state in RETRIED else "dead"
