"""Who may read a queue and who may build one: only ``emq/core`` reads a job hash, a lane or a queue's
sets (everyone else asks the engine's read methods, so one module owns how a job is stored), and only
``emq/core`` builds a physical queue (everyone else asks ``emq.core.logical`` for the queues of a name).
The checks read emq's source, as ``test_only_the_engine_calls_scripts`` does for ``scripts.run``.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
from pathlib import Path

import pytest

import emq
from emq.core import engine
from emq.core.engine.base import Ops

EMQ = Path(emq.__file__).parent
CORE = EMQ / "core"
# A queue's keys a module outside the core may name: its prefix and namespace (identities), the wake
# lists a parked worker or Pump blocks on, and the channel a worker hears cancels on (waiting, not
# reading a job).
NAMED_KEYS = {"prefix", "ns", "wake", "pumpwake", "cancels"}
# keys.py's per-job and per-group key prefixes, never spelt outside the core.
KEY_PREFIXES = {"JOB", "LANE", "PLANE", "MINUTE", "DEPS", "CHILDREN", "FLOW", "MEMBERS", "FINISHED", "UNIQUE", "RLOG"}
READS = {"hgetall", "hmget", "hget", "hkeys", "hvals", "hexists", "hlen", "lrange", "lindex", "lpos", "llen",
         "zrange", "zrevrange", "zrangebyscore", "zscore", "zmscore", "zcard", "zcount", "sscan", "smembers", "scard",
         "sismember", "smismember"}
# emq.core.stored's readers of a job
STORED_READS = {"ask", "ask_all", "answer", "answer_all", "read", "read_all", "filled"}


def _outside_core() -> list[tuple[str, ast.Module]]:
    return [(str(p.relative_to(EMQ.parent)), ast.parse(p.read_text())) for p in sorted(EMQ.rglob("*.py"))
            if CORE not in p.parents and "migrations" not in p.parts]


def _registry_key(node: ast.AST) -> bool:
    """keys.registry_queues(...) / registry_workers(...) / worker(...): the registries beside the queues."""
    f = node.func if isinstance(node, ast.Call) else None
    return (isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == "keys"
            and f.attr in ("registry_queues", "registry_workers", "worker"))


def direct_reads(tree: ast.Module) -> list[str]:
    """What a module reads of a queue directly: its keys beyond NAMED_KEYS, a key prefix, a read command
    on anything but a registry key, a reader of the stored job or of a lane."""
    found = []
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute) and node.value.attr == "keys"
                and node.attr not in NAMED_KEYS):
            found.append(f"line {node.lineno}: .keys.{node.attr}")
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "keys" \
                and node.attr in KEY_PREFIXES:
            found.append(f"line {node.lineno}: keys.{node.attr}")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in READS:
            if not node.args or not _registry_key(node.args[0]):
                found.append(f"line {node.lineno}: .{node.func.attr}(...)")
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "stored" \
                and node.attr in STORED_READS:
            found.append(f"line {node.lineno}: stored.{node.attr}")
        elif isinstance(node, ast.ImportFrom) and (node.module or "").endswith("core.lanes"):
            found.append(f"line {node.lineno}: imports emq.core.lanes")
    return found


def _engine_classes() -> set[str]:
    """The names of every class in emq.core.engine that is a physical queue's family of operations."""
    for info in pkgutil.iter_modules(engine.__path__):
        importlib.import_module(f"{engine.__name__}.{info.name}")
    return {name for mod in [engine, *(importlib.import_module(f"{engine.__name__}.{i.name}")
                                       for i in pkgutil.iter_modules(engine.__path__))]
            for name, obj in vars(mod).items() if inspect.isclass(obj) and issubclass(obj, Ops)}


def queues_built(tree: ast.Module, classes: set[str]) -> list[str]:
    """Calls of a physical queue's class (imported from emq.core.engine) or of ``engine.<class>``."""
    bound = {alias.asname or alias.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
             and (node.module or "").split(".")[-2:] in (["core", "engine"], ["engine", "queue"])
             for alias in node.names if alias.name in classes}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            if isinstance(f, ast.Name) and f.id in bound or isinstance(f, ast.Attribute) and f.attr in classes \
                    and isinstance(f.value, ast.Name) and f.value.id == "engine":
                found.append(f"line {node.lineno}: {ast.unparse(f)}(...)")
    return found


def test_no_module_outside_the_core_reads_a_job_a_lane_or_a_queues_sets():
    """The dashboard, the commands, emq.testing, the metrics (and every other module outside emq/core) read
    a queue only through the engine's read methods: ``Queue.page``, ``lane_page``, ``jobs``..."""
    outside = {path: found for path, tree in _outside_core() if (found := direct_reads(tree))}
    assert not outside, f"direct reads of a queue outside emq/core (add an engine read method instead): {outside}"


def test_nothing_outside_the_core_builds_a_physical_queue():
    """emq.Queue is the logical queue; the engine's physical one is built only inside emq/core (the rest of
    emq asks emq.core.logical.partitions / partition for the queues of a name)."""
    classes = _engine_classes()
    assert {"Queue", "KeepOps", "FlowOps"} <= classes
    outside = {path: found for path, tree in _outside_core() if (found := queues_built(tree, classes))}
    assert not outside, f"physical queues built outside emq/core: {outside}"


@pytest.mark.parametrize("source", [
    "client.hgetall(q.keys.job(job_id))",
    "pipe.lrange(q.keys.lane(g), 0, 9)",
    "client.zrange(q.keys.ns + keys.PLANE + g, 0, -1)",
    "x = q.keys.solo",
    "client.zrange(f'{prefix}:{{default}}:dead', 0, 10)",
    "stored.read(client, ks, ('fn',))",
    "from ..core.lanes import lane_range",
])
def test_the_read_check_is_not_vacuous(source):
    assert direct_reads(ast.parse(source))


@pytest.mark.parametrize("source", [
    "from ..core.engine import Queue\nQueue('default')",
    "from emq.core.engine.queue import Queue as Q\nQ('x', prefix='p')",
    "from ..core import engine\nengine.KeepOps('x')",
])
def test_the_build_check_is_not_vacuous(source):
    assert queues_built(ast.parse(source), _engine_classes())


def test_the_checks_let_through_what_a_module_may_do():
    """The registries, a queue's identity and wake lists, and the engine's read methods are not direct reads."""
    allowed = ("client.sscan(keys.registry_queues(p), 0)\nq.keys.prefix\nclient.blpop([q.keys.wake])\n"
               "q.page('dead', 0, ('fn',))\nrequest.POST.get('ids')\nfrom ..core.engine import Queue\nx: Queue")
    assert direct_reads(ast.parse(allowed)) == []
    assert queues_built(ast.parse(allowed), _engine_classes()) == []
