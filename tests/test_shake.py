"""Scripts carry only the prelude helpers they reach (emq/core/shake.py), and every one still loads."""

from __future__ import annotations

import pytest

from emq.core import scripts
from emq.core.shake import shaken

PRELUDES = """local ready, told
-- a comment naming unused_helper names nothing
local function unused_helper()
  return 1
end
local function inner()
  return 2
end
local function outer()
  return inner()
end
local function one_liner(x) return x end
told = function()
  return 3
end
"""


def test_a_helper_stays_only_when_reached():
    """The body reaches outer, outer reaches inner; nothing names unused_helper or told (a declaration does not)."""
    kept = shaken(PRELUDES, "return outer()")
    assert "function outer(" in kept and "function inner(" in kept
    assert "unused_helper()\n" not in kept and "told = function" not in kept
    assert "local ready, told" in kept


def test_a_one_line_helper_is_kept_as_other_code():
    """A helper not laid out over lines ending in a column-0 end is never cut, nor swallows the next one."""
    kept = shaken(PRELUDES, "return told()")
    assert "local function one_liner(x) return x end" in kept and "told = function" in kept
    assert "function outer(" not in kept


@pytest.mark.parametrize("events_max", [0, 100])
def test_every_script_loads_after_shaking(client, events_max):
    """Each script's shaken source compiles on the server, with events off and on."""
    for name in scripts.names():
        assert client.script_load(scripts.script(name, events_max).source) == scripts.script(name, events_max).sha
