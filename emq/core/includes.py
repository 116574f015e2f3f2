"""The helper files a Lua operation carries: its include graph, resolved once (as BullMQ's loader does).

Valkey runs a script's whole source on every call, so each top-level helper a script carries is a
closure made per call whether the script calls it or not, and
each top-level table is built per call. So the helpers live in small files by concern
(``emq/lua/_*.lua``), and every file, operation or helper, names the helper files it uses, one line
each, after its header::

    --- @include "_lanes"

An operation carries exactly the files its includes reach: each once, every file after the files
it includes (depth first, in the order the lines are written), so a helper is defined before the
helpers that call it, as Lua's locals need. A missing file or a circle of includes is an error
that names the chain. tests/test_includes.py checks that every file includes the files of the
helpers it names (one it forgot would be a global, nil when it runs).
"""

from __future__ import annotations

import re
from pathlib import Path

INCLUDE = re.compile(r'^--- @include "(\w+)"[ \t]*$', re.M)


class IncludeError(ValueError):
    """An include line names no file in emq/lua, or includes come round in a circle."""


def helpers(name: str, folder: Path) -> list[str]:
    """The helper files the operation ``name`` carries, in load order (the operation not among them)."""
    order: list[str] = []
    _visit(name, folder, order, [])
    return order[:-1]


def included(text: str) -> list[str]:
    """The files one Lua file includes, in the order it names them."""
    return INCLUDE.findall(text)


def _visit(name: str, folder: Path, order: list[str], chain: list[str]) -> None:
    if name in order:
        return
    if name in chain:
        raise IncludeError(f"circular include: {' -> '.join([*chain, name])}; one of these files must not "
                           "include the next (move the helper they share into a file of its own)")
    path = folder / f"{name}.lua"
    if not path.is_file():
        where = f'{chain[-1]}.lua has --- @include "{name}", but' if chain else "no operation:"
        raise IncludeError(f"{where} {path} does not exist; fix the include line or add the file")
    for dep in included(path.read_text()):
        _visit(dep, folder, order, [*chain, name])
    order.append(name)
