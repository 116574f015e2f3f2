"""The worker's claim and finish run as Valkey Functions (emq/core/functions.py): loaded on demand,
each call starting from the helpers' state a script's run would have, on every server."""

from __future__ import annotations

import pytest

import emq
from emq.core import functions, scripts
from emq.core.engine.queue import Queue
from emq.core.records import Outcome
from tests import jobs


def test_every_top_level_local_of_the_helpers_is_reset_or_constant():
    """A helper file's top-level local keeps its value between function calls: each is set afresh per call
    (RESET) or never changes (CONSTANTS), so a new one must be put in one of the two lists."""
    names = set()
    for helper in scripts.LUA_DIR.glob("_*.lua"):
        names |= functions.top_locals(helper.read_text())
    unknown = names - set(functions.RESET) - functions.CONSTANTS
    assert not unknown, f"helper locals in neither functions.RESET nor functions.CONSTANTS: {sorted(unknown)}"


@pytest.mark.parametrize("events_max", [0, 100])
def test_every_function_library_loads(client, events_max):
    """FUNCTION LOAD takes each library (one slot's node is enough to show it compiles)."""
    for name in sorted(functions.FUNCTIONS):
        s = scripts.script(name, events_max)
        node = {"target_nodes": client.get_node_from_key("x")} if hasattr(client, "get_node_from_key") else {}
        client.execute_command("FUNCTION", "LOAD", "REPLACE", s.library, **node)


def test_a_server_without_the_function_loads_it_and_runs_the_call(emq_env, client):
    """A node that lacks the library (restarted without persistence, new to the slot) answers
    "Function not found": the call loads it there and runs, and no state leaks between calls."""
    refs = [jobs.add.using(queue="fn-a").enqueue(i, 1) for i in range(3)]
    jobs.add.using(queue="fn-b").enqueue(5, 5)
    a, b = Queue("fn-a"), Queue("fn-b")
    for name in functions.FUNCTIONS:
        s = scripts.current(name)
        node = {"target_nodes": client.get_node_from_key(a.keys.ns)} if hasattr(client, "get_node_from_key") else {}
        try:
            client.execute_command("FUNCTION", "DELETE", s.function, **node)
        except Exception as exc:  # not loaded there yet: as good
            assert functions.missing(exc) or "not found" in str(exc).lower() or "no such library" in str(exc).lower()
    claimed = a.bclaim(2, "w1")
    assert sorted(c.id for c in claimed) == sorted(r.id for r in refs[:2])
    other = b.bclaim(5, "w1")  # another queue right after: ns and the call's tables are this call's
    assert [c.args for c in other] == [[5, 5]]
    assert a.finish([Outcome(c.id, c.token, "completed", "7") for c in claimed]) == ["completed"] * 2
    assert b.finish([Outcome(c.id, c.token, "completed", "null") for c in other]) == ["completed"]
    assert emq.get_job(claimed[0].id, queue="fn-a").result == 7
    assert emq.get_job(other[0].id, queue="fn-b").result is None
