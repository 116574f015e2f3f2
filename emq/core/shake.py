"""Leave out of a script the shared helpers it never reaches.

Valkey runs a script's whole source on every call, so each top-level helper of the preludes is a
closure made per call whether the script uses it or not (~0.1 us each, more with upvalues): the
mint of one job carried 50 of them and reached 19. ``shaken`` keeps a helper only when the
script's body, the preludes' other statements or a kept helper names it, so the kept source runs
exactly as the whole one did; it only stops making closures nothing calls.

A helper is a top-level ``local function name(...)`` or ``name = function(...)`` (a name an earlier
file declares) ending at the first ``end`` in column 0, the preludes' one layout. A declaration
line (``local a, b``) names nothing; comments name nothing.
"""

from __future__ import annotations

import re

# A helper's text never runs into the next top-level definition: a one-line helper stays other code.
DEFINITION = r"^(?:local function (\w+)\(|(\w+) = function\()"
HELPER = re.compile(DEFINITION + r"(?:(?!^local function |^\w+ = function\().)*?^end\n", re.M | re.S)
COMMENT = re.compile(r"--\[\[.*?\]\]|--[^\n]*", re.S)
DECLARATION = re.compile(r"^local [\w, ]+$", re.M)
WORD = re.compile(r"\w+")


def shaken(preludes: str, body: str) -> str:
    """The preludes without the helpers that neither the body nor the kept code names."""
    pieces: list[tuple[str | None, str]] = []
    pos = 0
    for m in HELPER.finditer(preludes):
        pieces.append((None, preludes[pos : m.start()]))
        pieces.append((m.group(1) or m.group(2), m.group(0)))
        pos = m.end()
    pieces.append((None, preludes[pos:]))
    named = _names(body) | _names("".join(text for name, text in pieces if name is None))
    kept: set[str] = set()
    while grown := [(name, text) for name, text in pieces if name in named and name not in kept]:
        for name, text in grown:
            kept.add(name)
            named |= _names(text)
    return "".join(text for name, text in pieces if name is None or name in kept)


def _names(code: str) -> set[str]:
    return set(WORD.findall(DECLARATION.sub("", COMMENT.sub("", code))))
