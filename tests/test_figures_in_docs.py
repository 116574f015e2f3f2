"""Measured figures live in the docs (docs/reference/performance.md), not in emq's comments: a
comment says why a part is shaped so, and a figure in it goes stale where nobody re-measures it.

The scan catches the usual forms of a measurement (µs, ns, instructions, callgrind, a % more or
less, an issue's measurement); it cannot read every sentence, so a review still looks.
"""

from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path

import emq

EMQ = Path(emq.__file__).parent
FIGURE = re.compile(r"\d\s?(µs|us|ns)\b|instructions|callgrind|issue #\d+|\d\s?%\s(more|less)|~\s?[\d.]+\s?%", re.I)
PENDING: set[str] = set()  # modules let off while a branch that rewrites them is under way (none now)


def prose(path: Path) -> list[tuple[int, str]]:
    """The comment and docstring lines of a Python or Lua file, with their line numbers."""
    text = path.read_text()
    if path.suffix == ".lua":
        return [(n, line) for n, line in enumerate(text.splitlines(), 1)]  # Lua holds figures in comments only
    out = []
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        quoted = tok.type == tokenize.STRING and tok.string.lstrip("rbuRBU")[:3] in ('"""', "'''")
        if tok.type == tokenize.COMMENT or quoted:
            out += [(tok.start[0] + i, line) for i, line in enumerate(tok.string.splitlines())]
    return out


def test_no_measured_figure_in_a_comment():
    found = []
    for path in sorted([*EMQ.rglob("*.py"), *EMQ.rglob("*.lua")]):
        name = str(path.relative_to(EMQ))
        if "migrations" in path.parts or any(name.startswith(p) for p in PENDING):
            continue
        found += [f"emq/{name}:{n}: {line.strip()}" for n, line in prose(path) if FIGURE.search(line)]
    assert not found, (
        "measured figures in code comments; move each to docs/reference/performance.md and leave the why:\n"
        + "\n".join(found))
