"""One owner in Lua of how a job is stored: ``emq/lua/_record.lua``. Every other Lua file gets a job's key from
``job_key`` and reads, writes, tests and deletes the job through ``rec_*`` helpers, never a command of its own on
that key, so that a new encoding of the record (issue 33) changes ``_record.lua`` and ``core/stored.py`` alone.
The checks read the Lua source, as tests/test_readers.py reads the Python for stored.py's readers.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import emq

LUA = Path(emq.__file__).parent / "lua"
OWNER = "_record"
COMMENT = re.compile(r"--\[\[.*?\]\]|--[^\n]*", re.S)
# A name given a job's key: "local key = job_key(id)", "key = job_key(id)", "victims[i] = job_key(id)".
HOLDS_KEY = re.compile(r"(\w+)(?:\[[^\]]*\])?\s*=\s*job_key\(")
CALL = re.compile(r"redis\.p?call\(\s*'(\w+)'\s*,\s*([^,)]+)")


def code(text: str) -> str:
    """A Lua file without its comments (a header may name job:<id>)."""
    return COMMENT.sub("", text)


def strays(text: str) -> list[str]:
    """What in one Lua file goes round the owner: a job key spelt out, or a command on a job's key."""
    body = code(text)
    found = [f"spells the key: {m.group(0)!r}" for m in re.finditer(r"'job:'", body)]
    names = set(HOLDS_KEY.findall(body))
    for m in CALL.finditer(body):
        arg = m.group(2).strip()
        if arg.startswith("job_key(") or re.sub(r"\[.*", "", arg) in names or arg.startswith("unpack(") and \
                arg[7:].split(")")[0] in names:
            found.append(f"{m.group(1)} on a job's key: {m.group(0)!r}")
    return found


def test_only_the_record_file_touches_a_jobs_key():
    out = {p.name: s for p in sorted(LUA.glob("*.lua")) if p.stem != OWNER if (s := strays(p.read_text()))}
    assert not out, f"go through _record.lua's helpers instead: {out}"


@pytest.mark.parametrize("source", [
    "local key = ns .. 'job:' .. id",
    "local key = job_key(id)\nlocal s = redis.call('HGET', key, 'state')",
    "victims[i] = job_key(id)\nredis.call('DEL', unpack(victims))",
    "redis.pcall('HGETALL', job_key(id))",
])
def test_the_check_is_not_vacuous(source):
    assert strays(source)


def test_the_check_lets_through_what_a_script_may_do():
    ok = """--[[ header: job:<id> ]]
local key = job_key(id)  -- 'job:' in a comment
local state = rec_get(key, 'state')
local flow = ns .. 'flow:' .. id
redis.call('HGET', flow, 'state')
redis.call('HGET', ns .. 'caps', group)"""
    assert strays(ok) == []


def test_the_owner_is_the_one_that_spells_the_key():
    assert "'job:'" in code((LUA / f"{OWNER}.lua").read_text())
