"""Lua helpers are included per script (emq/core/includes.py): each file includes what it uses, a
script carries only what its includes reach, and every script still loads."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from emq.core import functions, includes, scripts

LUA = scripts.LUA_DIR
HELPERS = sorted(p.stem for p in LUA.glob("_*.lua"))
COMMENT = re.compile(r"--\[\[.*?\]\]|--[^\n]*", re.S)
STRING = re.compile(r"'(?:[^'\\\n]|\\.)*'|\"(?:[^\"\\\n]|\\.)*\"")
# What a file declares anywhere: locals, local functions, parameters, loop variables.
LOCAL = re.compile(r"\blocal\s+(?:function\s+)?([\w, ]+)")
PARAMS = re.compile(r"\bfunction\s*\w*\s*\(([\w, ]*)\)")
LOOP = re.compile(r"\bfor\s+([\w, ]+?)\s+(?:=|in)\b")
TOP = re.compile(r"^(?:local function (\w+)|local ([\w, ]+?)\s*(?:=|$)|(\w+) = function\()", re.M)


def code(text: str) -> str:
    return STRING.sub("''", COMMENT.sub("", text))


def declared(text: str) -> set[str]:
    found = set()
    for pattern in (LOCAL, PARAMS, LOOP):
        for m in pattern.finditer(code(text)):
            found |= {n.strip() for n in m.group(1).split(",") if n.strip()}
    return found


def top_level(text: str) -> set[str]:
    """The names a helper file gives its includers: its top-level locals and functions."""
    return {n.strip() for m in TOP.finditer(code(text)) for g in m.groups() if g for n in g.split(",")}


def owners() -> dict[str, str]:
    """Each name a helper file defines at top level -> that file."""
    found: dict[str, str] = {}
    for helper in HELPERS:
        for name in top_level((LUA / f"{helper}.lua").read_text()):
            assert name not in found, f"{name} is defined in both {found[name]}.lua and {helper}.lua"
            found[name] = helper
    return found


@pytest.mark.parametrize("path", sorted(LUA.glob("*.lua")), ids=lambda p: p.name)
def test_every_file_includes_the_files_of_the_helpers_it_names(path: Path):
    """A helper named without its file included would be a global: nil, an error only when it runs."""
    text = path.read_text()
    mine = declared(text)
    wanted = {owner for name, owner in owners().items()
              if owner != path.stem and name not in mine and re.search(rf"\b{name}\b", code(text))}
    missing = wanted - set(includes.included(text))
    assert not missing, f"{path.name} names helpers of {sorted(missing)}: add --- @include lines for them"


@pytest.mark.parametrize("helper", HELPERS)
def test_a_helper_file_defines_each_helper_before_the_helpers_that_call_it(helper: str):
    """Lua binds a local from its declaration on: a helper that calls one defined below it calls a global."""
    text = code((LUA / f"{helper}.lua").read_text())
    seen: set[str] = set()
    heads = list(TOP.finditer(text))
    for i, m in enumerate(heads):
        unit = text[m.start(): heads[i + 1].start() if i + 1 < len(heads) else len(text)]
        seen |= {n.strip() for g in m.groups() if g for n in g.split(",")}
        later = {n for h in heads[i + 1:] for g in h.groups() if g for n in g.split(",")} - seen
        early = {n for n in later if re.search(rf"\b{n}\b", unit)}
        assert not early, f"{helper}.lua: {sorted(early)} used above its definition"


def test_a_script_carries_each_helper_file_once_after_those_it_includes():
    for name in scripts.names():
        order = includes.helpers(name, LUA)
        assert len(order) == len(set(order))
        for i, helper in enumerate(order):
            assert set(includes.included((LUA / f"{helper}.lua").read_text())) <= set(order[:i]), (name, helper)


def test_a_missing_or_circular_include_is_a_clear_error(tmp_path: Path):
    (tmp_path / "op.lua").write_text('--- @include "_a"\nreturn 1\n')
    (tmp_path / "_a.lua").write_text('--- @include "_b"\n')
    with pytest.raises(includes.IncludeError, match=r'_a.lua has --- @include "_b", but .*_b.lua does not exist'):
        includes.helpers("op", tmp_path)
    (tmp_path / "_b.lua").write_text('--- @include "_a"\n')
    with pytest.raises(includes.IncludeError, match="circular include: op -> _a -> _b -> _a"):
        includes.helpers("op", tmp_path)
    (tmp_path / "_b.lua").write_text("local b = 1\n")
    assert includes.helpers("op", tmp_path) == ["_b", "_a"]


def test_no_lua_file_is_over_300_lines():
    long = {p.name: n for p in LUA.glob("*.lua") if (n := len(p.read_text().splitlines())) > 300}
    assert not long, f"Lua files over 300 lines: {long}; split a helper file, or move helpers out of the script"


@pytest.mark.parametrize("path", sorted(LUA.glob("*.lua")), ids=lambda p: p.name)
def test_every_include_is_used(path: Path):
    """An include the file no longer needs costs each script that carries it a closure a call per helper."""
    text = code(path.read_text())
    for helper in includes.included(path.read_text()):
        names = top_level((LUA / f"{helper}.lua").read_text())
        assert any(re.search(rf"\b{n}\b", text) for n in names), f"{path.name} includes {helper} and uses none of it"


@pytest.mark.parametrize("events_max", [0, 100])
def test_every_script_loads(client, events_max):
    """Each script's source compiles on the server, with events off and on."""
    for name in scripts.names():
        assert client.script_load(scripts.script(name, events_max).source) == scripts.script(name, events_max).sha


def test_a_function_library_resets_only_the_state_its_helpers_declare():
    """bclaim carries no flow helpers: its library must not assign their state (a global write fails)."""
    library = scripts.script("bclaim").library
    assert "  told = {}" not in library and "  PRIO = {}" in library
    assert functions.top_locals("local a, b = 1\nlocal function f()\nend\n  local c = 2\n") == {"a", "b"}
