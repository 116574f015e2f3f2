"""The house stays readable: small modules, classes and functions (STYLE: ~400 lines a module at
most; the redesign's bar is lower) — a newcomer can read any room of emq/ in one sitting.

The layers themselves (imports point downward, the core knows no Django, no cycles) are
import-linter's contracts in pyproject.toml, run by ``make lint`` before the suite.
"""

from __future__ import annotations

import ast
from pathlib import Path

import emq

EMQ = Path(emq.__file__).parent
MODULE_LINES, CLASS_LINES, FUNCTION_LINES = 300, 150, 40
ONE_JOB = "One job:"  # a class's docstring paragraph saying why it passes CLASS_LINES with one duty


def _sources() -> list[tuple[str, ast.Module, int]]:
    out = []
    for path in sorted(EMQ.rglob("*.py")):
        if "migrations" in path.parts:
            continue
        text = path.read_text()
        out.append((str(path.relative_to(EMQ.parent)), ast.parse(text), len(text.splitlines())))
    return out


def _spans(tree: ast.Module, kinds: tuple[type, ...]) -> list[tuple[str, int]]:
    return [(node.name, node.end_lineno - node.lineno + 1) for node in ast.walk(tree) if isinstance(node, kinds)]


def test_no_module_is_long():
    long = [(path, n) for path, _, n in _sources() if n > MODULE_LINES]
    assert not long, f"modules over {MODULE_LINES} lines (split them by duty): {long}"


def test_no_class_is_long():
    """The bar is one duty a class: one past CLASS_LINES has one job that its lines mislead about, and its
    docstring says why (a paragraph that starts with ONE_JOB); none passes MODULE_LINES."""
    long = []
    for path, tree, _ in _sources():
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and (n := node.end_lineno - node.lineno + 1) > CLASS_LINES:
                why = any(p.startswith(ONE_JOB) for p in (ast.get_docstring(node) or "").split("\n\n"))
                if not why or n > MODULE_LINES:
                    long.append((path, node.name, n))
    assert not long, f"classes over {CLASS_LINES} lines (give a duty its own class, or say its one job): {long}"


def test_no_function_is_long():
    kinds = (ast.FunctionDef, ast.AsyncFunctionDef)
    long = [(path, name, n) for path, tree, _ in _sources() for name, n in _spans(tree, kinds) if n > FUNCTION_LINES]
    assert not long, f"functions over {FUNCTION_LINES} lines (name their steps): {long}"
