"""An attempt's outcome in words, from the state the finish script decided and what the job raised.

The server decides retried or dead (``finish.lua``); this only names it. An attempt that ended by
a known exception is named after it whatever the state: the engine's cancellation and time limit
errors register here (``ERROR_OUTCOMES``), so a cancelled job reads "cancelled", not "dead".
"""

from __future__ import annotations

from ..core.records import Outcome

RETRIED = ("ready", "scheduled")
SUSPENDED = ("ready", "scheduled", "waiting")  # where a durable job's suspended run leaves it
# Outcomes that give the job back without spending an attempt -> their name while it waits again.
SPARED = {"ratelimited": "rate limited", "unknown": "unknown name", "spared": "spared"}
# Exception paths ("module.Type", as the first line of an error text starts) -> outcome name.
ERROR_OUTCOMES: dict[str, str] = {"emq.errors.JobTimeout": "timed out", "emq.errors.Cancelled": "cancelled"}


def name(state: str, record: Outcome) -> str:
    """"completed", "retried", "dead", "stale", "missing", "timed out", "cancelled", "suspended", or one of SPARED's.

    A cancelled job's own finish is refused as stale (the server cancelled it first), so its
    outcome is named from the ``Cancelled`` it raised; a timed-out attempt is retried or dead
    like any failure, and named "timed out". A job given back without spending an attempt is named
    for why ("rate limited", "unknown name": no worker that claimed it knew its name).
    """
    if state in ("completed", "missing"):
        return state
    if record.outcome in SPARED and state in RETRIED:
        return SPARED[record.outcome]
    if record.outcome == "suspended" and state in SUSPENDED:  # a durable job slept or waits (_suspend.lua)
        return "suspended"
    known = ERROR_OUTCOMES.get(record.value.split(":", 1)[0]) if record.value else None
    if known and (state != "stale" or known == "cancelled"):
        return known
    if state == "stale":
        return state
    return "retried" if state in RETRIED else "dead"


def suspension(value: str) -> str:
    """What a suspended run waits for, from finish's "suspended" value: "sleep 2", "signal approve", "children"."""
    kind, _, rest = value.partition("|")
    name = rest.partition("|")[2]
    return {"z": f"sleep {name}", "w": f"signal {name}", "c": "children"}.get(kind, value)
