"""The operations that run as a Valkey Function (FCALL) rather than a script (EVALSHA).

A script's whole source runs on every call: each helper of the preludes is made afresh (a closure,
its upvalues, the garbage they leave for the collector), ~45k instructions a call before the
operation does anything. A function library runs the preludes once, at FUNCTION LOAD, and a call
runs only the operation's body, in the functions' Lua heap (small: the scripts' heap holds every
script, and its collector walks them all). The worker's claim and finish cost the server ~22 % less
a job at 10 jobs a call, 3-10 % at 50 (same Lua, interleaved A/B, INFO commandstats).

A library is named by its source's SHA1, as a script is, so two versions of emq never share one.
It lives on the server (replicated, persisted with the data); a server that lacks it (a restart
without persistence, a node new to the slot) answers "Function not found" and ``scripts`` loads it
on that node and runs the call again, as it does a script on NOSCRIPT. Unlike the script cache,
the libraries of earlier versions stay until deleted (~100 KB each; FUNCTION LIST LIBRARYNAME emq_
shows them, and FUNCTION DELETE of one is safe once no process of its version runs).

Functions are refused up front at maxmemory (no allow-oom flag). A script was refused only at a
first write that may grow memory: a finish at its HSET, as now, but a claim's LPOP is not one, so
claims went on leasing jobs whose finishes could not land; now the worker waits for memory before
claiming too (its outcomes wait in its buffer, as before).
"""

from __future__ import annotations

from typing import Any

import redis

# The worker's hot path: a claim and a finish a round trip.
FUNCTIONS = frozenset({"bclaim", "finish"})
# The preludes' state of one call, set afresh before each (a script's run of its whole source did
# that). Every other top-level local of the preludes is a constant or a helper defined once: a test
# (tests/test_functions.py) fails when a prelude gains a top-level local in neither list.
RESET = {"ns": "keys[1]", "events": "{}", "counters_mode": "nil", "ready_pending": "0", "RHOLD": "nil",
         "started_at": "nil", "told": "{}", "telling": "false", "RATES": "{}", "HOLDS": "nil", "HOLDAT": "{}",
         "PRIO": "{}", "WAKE_TOKEN": "nil"}
CONSTANTS = frozenset({"EVENTS_MAX", "EVENT_CHUNK", "DEFAULT", "KNOWN", "SETTLED", "JOB_FIELDS", "OPTIONAL", "PMARK",
                       "flow_finished", "claim_fault", "quarantine", "misplaced", "lease_gone", "leased_before_start"})


def name_of(op: str, sha: str) -> str:
    """The FCALL name (and library name) of one version of an operation."""
    return f"emq_{op}_{sha[:16]}"


def library(function: str, preludes: str, body: str) -> str:
    """The FUNCTION LOAD source of one operation: the preludes once, its body as the function.

    KEYS and ARGV are the call's: locals that the preludes and the body see as upvalues."""
    reset = "\n".join(f"  {name} = {value}" for name, value in RESET.items())
    return "\n".join([
        f"#!lua name={function}",
        "local KEYS, ARGV = {}, {}",
        preludes,
        "local function begin(keys, args)",
        "  KEYS, ARGV = keys, args",
        reset,
        "end",
        "local function call(keys, args)",
        "  begin(keys, args)",
        body,
        "end",
        f"redis.register_function('{function}', call)",
        "",
    ])


def missing(reply: Any) -> bool:
    """Whether a reply says the server lacks the function (not loaded there yet): load, then run again."""
    return isinstance(reply, redis.ResponseError) and str(reply).startswith("Function not found")


def loaded(reply: Any) -> bool:
    """Whether a FUNCTION LOAD reply leaves the library on the server (loaded now, or by someone else first)."""
    return not isinstance(reply, Exception) or "already exists" in str(reply)
