"""Every script touches one cluster slot: read each ``emq/lua/*.lua`` and its Python wrappers.

A script's keys all share the queue's hash tag when (a) its wrapper passes exactly the queue's
namespace as KEYS[1] (``scripts.run`` adds the slot guard as KEYS[2]), and (b) the Lua builds
every key it touches from ``ns`` and nothing else. This test fails when either could break.
The run on the local cluster (EMQ_TEST_CLUSTER=1) catches at run time what slips past it.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from emq.core import keys, scripts

EMQ = Path(scripts.__file__).parent.parent  # emq/
KEYLESS = {"TIME", "PING", "ECHO", "INFO"}  # INFO: the sweep reads the server's uptime (a restart)
ALL_KEYS = {"DEL", "UNLINK", "EXISTS", "MGET", "TOUCH"}  # every argument is a key
TWO_KEYS = {"LMOVE", "RPOPLPUSH", "BLMOVE", "SMOVE", "RENAME", "RENAMENX", "COPY"}
FORBIDDEN = {"KEYS", "SCAN", "FLUSHALL", "FLUSHDB", "RANDOMKEY"}


# _record.lua's helpers (the job record's one owner) and which of their arguments are keys: the owner's own
# commands take the keys its callers give, so the check reads its callers' arguments instead of its body.
RECORD = EMQ / "lua" / "_record.lua"
RECORD_FILES = [EMQ / "lua" / f"{name}.lua" for name in ("_record", "_pending", "_packed")]  # the record's owner
RECORD_KEYS = {"rec_get": 1, "rec_has": 1, "rec_try_get": 1, "rec_fields": 1, "rec_all": 1, "rec_try_all": 1,
               "rec_try_fields": 1, "rec_set": 1, "rec_set_new": 1, "rec_add": 1, "rec_unset": 1, "rec_exists": 1,
               "rec_foreign": 1, "rec_count": None, "rec_delete": 1, "rec_create": 1, "rec_put": 1, "rec_update": 1,
               "rec_fetched": 1, "rec_put_fields": 1}
RECORD_NO_KEYS = {"rec_head", "rec_pack", "rec_unpack", "rec_flush", "rec_prefetch", "rec_fresh",
                  "rec_rest", "rec_clean", "rec_write_all", "rec_claim", "rec_complete", "rec_table", "rec_decoded",
                  "rec_take", "rec_pack_fields", "rec_flat", "rec_ready", "rec_marks", "rec_front"}  # values, or ids


def lua(name: str) -> str:
    """The full source scripts.py sends, comments and the record's helpers (checked at their call sites) stripped."""
    src = scripts.script(name).source
    for path in RECORD_FILES:
        src = src.replace(path.read_text(), "")
    src = re.sub(r"--\[\[.*?\]\]", "", src, flags=re.S)
    return re.sub(r"--[^\n]*", "", src)


def split_args(text: str) -> list[str]:
    """Split a call's argument text at top-level commas; stop at its closing parenthesis."""
    args, depth, cur = [], 0, ""
    for ch in text:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            if depth == 0:
                break
            depth -= 1
        elif ch == "," and depth == 0:
            args.append(cur.strip())
            cur = ""
            continue
        cur += ch
    args.append(cur.strip())
    return args


def calls_of(src: str, fn: str) -> list[list[str]]:
    return [split_args(src[m.end() :]) for m in re.finditer(rf"(?<![\w.:]){re.escape(fn)}\(", src)]


class KeyCheck:
    """Decides whether a Lua expression can only name a key built from ``ns``."""

    def __init__(self, src: str) -> None:
        self.src = src
        self.bindings: dict[str, list[str]] = {}
        for m in re.finditer(r"(?:local\s+)?\b(\w+)(\[[^\]]*\])?\s*=(?!=)\s*(?=([^\n]+))", src):
            self.bindings.setdefault(m.group(1), []).append(("[]" if m.group(2) else "") + m.group(3).strip())
        self.params: dict[str, tuple[str, int]] = {}
        for m in re.finditer(r"function\s+(\w+)\s*\(([^)]*)\)", src):
            for i, p in enumerate(x.strip() for x in m.group(2).split(",")):
                self.params.setdefault(p, (m.group(1), i))

    def expr(self, e: str, seen: frozenset = frozenset()) -> bool:
        e = e.strip()
        if e.startswith(("ns ..", "job_key(")):  # job_key: ns .. 'job:' .. id (_record.lua)
            return True
        if e.startswith("{") and e.endswith("}"):  # a list of keys (rec_delete)
            return all(self.expr(x, seen) for x in split_args(e[1:-1]))
        m = re.fullmatch(r"unpack\((\w+)\)", e) or re.fullmatch(r"(\w+)", e)
        return bool(m) and self.ident(m.group(1), seen)

    def ident(self, name: str, seen: frozenset) -> bool:
        if name in seen:
            return True
        seen = seen | {name}
        bound = self.bindings.get(name, [])
        if any(b.startswith(("[]ns ..", "[]job_key(")) for b in bound):  # element-wise: victims[j] = job_key(id)
            return True
        if bound:
            return all(self.expr(b, seen) for b in bound)
        if name in self.params:
            fn, i = self.params[name]
            sites = [a for a in calls_of(self.src, fn) if len(a) > i]
            return bool(sites) and all(self.expr(a[i], seen) for a in sites)
        return False


def key_args(command: str, args: list[str]) -> list[str]:
    if command in KEYLESS:
        return []
    if command in ALL_KEYS:
        return args
    if command in TWO_KEYS:
        return args[:2]
    return args[:1]


@pytest.mark.parametrize("name", scripts.names())
def test_every_key_a_script_touches_is_built_from_its_namespace(name):
    """redis.call(...) names keys only as ns .. suffix, or locals bound to such; no KEYS[i] but KEYS[1]."""
    src = lua(name)
    assert re.findall(r"KEYS\[(\d+)\]", src) == ["1"], f"{name}: only the first line (local ns = KEYS[1]) reads KEYS"
    for command in re.findall(r"redis\.p?call\(\s*'(\w+)'", src):
        assert command.upper() not in FORBIDDEN, f"{name}: {command} walks the whole keyspace"
    assert not (bad := unbuilt(src)), f"{name}.lua: not keys built from ns (KEYS[1]): {bad}"


def unbuilt(src: str) -> list[str]:
    """The key arguments in src, of redis.call and of the record's helpers, that may name a key not built from ns."""
    check = KeyCheck(src)
    found = []
    for m in re.finditer(r"redis\.p?call\(\s*'(\w+)'\s*,?", src):
        found += [f"{m.group(1)} {a}" for a in key_args(m.group(1).upper(), split_args(src[m.end() :]))
                  if not check.expr(a)]
    for helper, n in RECORD_KEYS.items():
        for args in calls_of(src, helper):
            if helper == "rec_delete" and not args[0].startswith("{"):  # a list of keys by name
                args = [f"unpack({args[0]})"]
            found += [f"{helper} {a}" for a in args[:n] if not check.expr(a)]
    return found


def test_the_record_owner_builds_a_jobs_key_from_ns():
    """The one key _record.lua makes itself; every other key its helpers touch is a caller's, checked above."""
    src = re.sub(r"--[^\n]*", "", re.sub(r"--\[\[.*?\]\]", "", RECORD.read_text(), flags=re.S))
    assert re.search(r"function key_of\(id\)\s*return ns \.\. 'job:' \.\. id\s*end", src)
    assert src.count("'job:'") == 1, "a job's key is made in key_of alone"
    assert re.search(r"function job_key\(id\)\s*return KEY_OF\[id\] or key_of\(id\)\s*end", src)
    # its memo of a batch's keys (rec_prefetch) holds only keys key_of made
    assert re.findall(r"KEY_OF\[(\w+)\] = (\w+)", src) == [("id", "key")]
    assert re.search(r"local key = key_of\(id\)\s+KEY_OF\[id\] = key", src)
    every = "".join(path.read_text() for path in RECORD_FILES)
    assert set(re.findall(r"function (rec_\w+)", every)) == set(RECORD_KEYS) | RECORD_NO_KEYS


@pytest.mark.parametrize("name", scripts.names())
def test_every_suffix_a_script_uses_is_named_in_keys_py(name):
    """Only keys.py spells key names: each ns .. '<suffix>' in Lua is one of its fixed keys or prefixes."""
    prefixes = keys.PREFIXES
    for suffix in re.findall(r"ns \.\. '([^']*)'", lua(name)):
        assert suffix in keys.FIXED or suffix in prefixes, f"{name}.lua uses key suffix {suffix!r} unknown to keys.py"


@pytest.mark.parametrize("name", scripts.names())
def test_every_header_declares_only_the_namespace(name):
    """The header documents KEYS[1] = ns (<prefix>:{<queue>}:) and no other declared key."""
    header = (scripts.LUA_DIR / f"{name}.lua").read_text().split("]]", 1)[0]
    assert re.search(r"KEYS\[1\]\s+ns\s+<prefix>:\{<queue>\}:", header), f"{name}.lua: header lacks KEYS[1] ns"
    assert re.findall(r"KEYS\[(\d+)\]", header) == ["1"], f"{name}.lua: a script declares only KEYS[1]"


def script_calls() -> list[tuple[Path, ast.Call]]:
    """Every call of scripts.run / run_one / run_many / run_fenced in emq/, with the file it is in."""
    found = []
    for path in EMQ.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr in ("run", "run_one", "run_many", "run_fenced")
                    and isinstance(node.func.value, ast.Name) and node.func.value.id == "scripts"):
                found.append((path, node))
    return found


def test_only_the_engine_calls_scripts():
    """emq.core.engine is the one caller of scripts.run: it alone knows each script's ARGV order."""
    engine = EMQ / "core" / "engine"
    calls = script_calls()
    assert calls, "found no script call in emq/"
    outside = sorted({str(path.relative_to(EMQ)) for path, _ in calls if engine not in path.parents})
    assert not outside, f"scripts.run called outside emq/core/engine/: {outside}; add an engine method instead"


def test_every_wrapper_passes_exactly_the_queue_namespace():
    """Python passes [<queue>.keys.ns] as a script's keys: one slot, and scripts.run adds its guard."""
    keys_args = []
    for path, call in script_calls():
        if call.func.attr in ("run", "run_one"):
            keys_args.append((path.name, ast.unparse(call.args[2])))
        else:  # run_many(client, [(name, keys, argv), ...]): the middle of each 3-tuple
            keys_args += [(path.name, ast.unparse(t.elts[1])) for t in ast.walk(call.args[1])
                          if isinstance(t, ast.Tuple) and len(t.elts) == 3]
    assert keys_args, "found no script call sites in emq/"
    for file, keys_arg in keys_args:
        assert re.fullmatch(r"\[\s*(self\.)?(\w+\.)?keys\.ns\s*\]", keys_arg) or keys_arg == "keys", (
            f"{file}: a script is called with keys {keys_arg}; pass [queue.keys.ns] only"
        )


def test_every_script_has_a_python_wrapper():
    """No script is dead code: each is called from emq/ (through engine.Queue._run or scripts.run)."""
    text = "\n".join(p.read_text() for p in EMQ.rglob("*.py") if p.name != "scripts.py")
    for name in scripts.names():
        assert f'"{name}"' in text, f"emq/lua/{name}.lua has no caller in emq/"


def test_the_guard_key_shares_the_namespace_slot():
    """KEYS[2] is in KEYS[1]'s slot for any prefix and queue (the hash tag is the queue)."""
    from redis.cluster import key_slot

    for prefix, queue in [("emq", "default"), ("a:b", "Q#3"), ("x", "mail")]:
        ns = keys.QueueKeys(prefix, queue).ns
        assert len({key_slot(k.encode()) for k in scripts.declared([ns])}) == 1


@pytest.mark.parametrize(
    "body",
    [
        "redis.call('GET', 'emq:{other}:x')",
        "local k = ARGV[1]\nredis.call('HSET', k, 'a', 1)",
        "local function f(key) redis.call('DEL', key) end\nf(ns .. 'ring')\nf(ARGV[2])",
        "redis.call('LMOVE', ns .. 'ring', ARGV[1], 'LEFT', 'RIGHT')",
        "redis.call('DEL', ns .. 'ring', ARGV[1])",
        "rec_get(ARGV[1], 'state')",
        "rec_count(job_key(id), ARGV[1])",
        "local victims = {}\nvictims[1] = ARGV[1]\nrec_delete(victims)",
        "rec_delete({job_key(id), ARGV[1]})",
    ],
)
def test_the_checker_refuses_a_key_not_built_from_ns(body):
    """The static check is not vacuous: keys from ARGV, literals or a bad call site are caught."""
    assert unbuilt("local ns = KEYS[1]\n" + body)


def test_no_module_walks_the_keyspace_or_sends_a_multi_key_command():
    """Outside the test helpers (emq/testing.py and its walks, emq/core/audit.py) and ``manage.py emq rekey``
    (emq/core/engine/rekey.py: an operator's command, and SCAN is what guarantees it sees every job key,
    whatever state the job moves to meanwhile) nothing SCANs or KEYS the whole keyspace, and no command
    names two keys.

    Registries (<prefix>:queues, :workers, :worker:<id>) are read one key per command, so the admin
    and the workers run unchanged on a cluster.
    """
    client = r"(?:client(?:\(\))?|pipe)"  # client, self.client, get_client(), pipe
    walking = re.compile(client + r"\.(scan_iter|scan|keys|mget|mset|msetnx|sunion\w*|sinter\w*|sdiff\w*|"
                         r"zunion\w*|zinter\w*|zdiff\w*|rename|renamenx|smove|lmove|blmove|rpoplpush|copy)\(")
    for path in EMQ.rglob("*.py"):
        if str(path.relative_to(EMQ)) in ("testing.py", "core/audit.py", "core/engine/rekey.py") \
                or "migrations" in path.parts:
            continue
        for n, line in enumerate(path.read_text().splitlines(), 1):
            assert not walking.search(line), f"{path.relative_to(EMQ.parent)}:{n}: {line.strip()}"
            assert not re.search(client + r"\.(delete|exists|unlink|blpop|brpop)\(\s*\*", line), (
                f"{path.relative_to(EMQ.parent)}:{n}: a command over many keys may span slots"
            )
