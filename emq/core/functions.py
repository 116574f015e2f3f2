"""The operations that run as a Valkey Function (FCALL) rather than a script (EVALSHA).

A script's whole source runs on every call: each helper it includes is made afresh (a closure,
its upvalues, the garbage they leave for the collector) before the operation does anything. A
function library runs the helpers once, at FUNCTION LOAD, and a call runs only the operation's
body, in the functions' Lua heap (small: the scripts' heap holds every script, and its collector
walks them all). The worker's claim and finish cost the server less a job, the more so the smaller
its batches (docs/reference/performance.md).

A library is named by its source's SHA1, as a script is, so two versions of emq never share one.
It lives on the server (replicated, persisted with the data); a server that lacks it (a restart
without persistence, a node new to the slot) answers "Function not found" and ``scripts`` loads it
on that node and runs the call again, as it does a script on NOSCRIPT. Unlike the script cache,
the libraries of earlier versions stay until deleted (~100 KB each; FUNCTION LIST LIBRARYNAME emq_
shows them, and FUNCTION DELETE of one is safe once no process of its version runs).

Both are registered with the ``allow-oom`` flag: a server at ``maxmemory`` (noeviction) still
claims and finishes, so its workers drain it by themselves while every mint is refused (ServerFull:
the mint scripts carry no such flag). Without it a function is refused up front at maxmemory, and
a full server stood still until an operator purged it. The price: what a claim and a finish write
(a few fields a job, its result, its place in done) may take the server past maxmemory while it
drains; retention trims finished jobs as usual (docs/guides/failure-modes.md). A full server also
refuses FUNCTION LOAD: a version whose library it lacks runs the call as a script (EVAL) with the
same flag in its shebang (ALLOW_OOM), the whole source sent each time, until memory is freed. The
lease renewal (extend, progress: scripts) carries the same shebang, so a full server does not let
the leases of running jobs run out.
"""

from __future__ import annotations

import re
from typing import Any

import redis

# The worker's hot path, a claim and a finish a round trip, and an enqueue's lean mint (mint_one: as a
# script it made its ~30 helpers afresh on every call, 20 % of its server time; issue 34 measured it).
FUNCTIONS = frozenset({"bclaim", "finish", "mint_one"})
# What a full server still runs: the worker's claim and finish (they drain it) and the renewal of the
# leases it holds meanwhile (extend, and the progress that rides with it), each a few fields a job.
ALLOW_OOM_OPS = frozenset({"bclaim", "finish", "extend", "progress"})
ALLOW_OOM = "#!lua flags=allow-oom\n"  # a script's first line that lets it run on a full server
# The helpers' state of one call, set afresh before each (a script's run of its whole source did
# that), for those of them a library includes. Every other top-level local of the helper files is a
# constant or a helper defined once: a test (tests/test_functions.py) fails when a helper file gains a
# top-level local in neither list.
RESET = {"ns": "keys[1]", "events": "{}", "counters_mode": "nil", "ready_pending": "0", "RHOLD": "nil",
         "started_at": "nil", "told": "{}", "telling": "false", "RATES": "{}", "HOLDS": "nil", "HOLDAT": "{}",
         "PRIO": "{}", "WAKE_TOKEN": "nil", "reopen_list": "{}", "reopening": "false", "QUOTA": "nil",
         "PENDING": "{}", "pending_n": "0", "FETCHED": "{}",
         "NUM_TEXT": "{}", "LEASE_MS": "{}", "DECODED": "{}", "HASHED": "{}",
         "KEY_OF": "{}", "HEADS": "{{}, {}, {}}"}
CONSTANTS = frozenset({"EVENTS_MAX", "EVENT_CHUNK", "FORMAT", "DEFAULT", "DEFAULTS", "KNOWN", "SETTLED", "JOB_FIELDS",
                       "OPTIONAL", "PMARK", "flow_finished", "reopen", "CHORD_READ", "REVIVE_ADD", "ORPHAN_BATCH",
                       "ORPHAN_EVERY", "CLASS_LEN", "MAX_CLASSES", "OTHER", "KEEL", "KEEL_MIN", "SEP", "PACKED",
                       "HEAD_AT", "MATCH", "MARK", "JOURNAL"})
# A top-level local that is not a function: "local a, b = ..." or "local a" in column 0.
TOP_LOCAL = re.compile(r"^local (?!function )([\w, ]+?)\s*(?:=|$)", re.M)


def name_of(op: str, sha: str) -> str:
    """The FCALL name (and library name) of one version of an operation."""
    return f"emq_{op}_{sha[:16]}"


def top_locals(lua: str) -> set[str]:
    """The names a Lua text declares as top-level locals other than functions."""
    return {n.strip() for m in TOP_LOCAL.finditer(lua) for n in m.group(1).split(",")}


def library(function: str, helpers: str, body: str, allow_oom: bool = False) -> str:
    """The FUNCTION LOAD source of one operation: its helpers once, its body as the function, flagged
    allow-oom when a full server must still run it (ALLOW_OOM_OPS; a mint must be refused there).

    KEYS and ARGV are the call's: locals that the helpers and the body see as upvalues. Only the
    state the helpers declare is reset (a name they lack would be a global, which a function may
    not write)."""
    flags = "{'allow-oom'}" if allow_oom else "{}"
    declared = top_locals(helpers)
    reset = "\n".join(f"  {name} = {value}" for name, value in RESET.items() if name in declared)
    return "\n".join([
        f"#!lua name={function}",
        "local KEYS, ARGV = {}, {}",
        helpers,
        "local function begin(keys, args)",
        "  KEYS, ARGV = keys, args",
        reset,
        "end",
        "local function call(keys, args)",
        "  begin(keys, args)",
        body,
        "end",
        f"redis.register_function{{function_name = '{function}', callback = call, flags = {flags}}}",
        "",
    ])


def missing(reply: Any) -> bool:
    """Whether a reply says the server lacks the function (not loaded there yet): load, then run again."""
    return isinstance(reply, redis.ResponseError) and str(reply).startswith("Function not found")


def loaded(reply: Any) -> bool:
    """Whether a FUNCTION LOAD reply leaves the library on the server (loaded now, or by someone else first)."""
    return not isinstance(reply, Exception) or "already exists" in str(reply)
