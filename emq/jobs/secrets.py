"""Which names hold secrets, and a progress note as it is kept: the rule every view of a job applies.

A name is secret when it matches ``EMQ_MASK`` (a regular expression, case-insensitive; the default
follows Django's ``SafeExceptionReporterFilter`` and adds auth, credential, cookie, session and
private). The dashboard and the API mask a job's arguments by it (``emq/dashboard/masking.py``).
A progress note is free text a job writes while it runs: it is cut to MAX_NOTE characters when the
job reports it (``cut``), and its ``name=value`` pairs are masked by the same rule when the worker
stores it (``in_text``, at most once a second a job: a case-blind regular expression costs
microseconds, too much for a call a job may make in its innermost loop). No reader of the job
(the dashboard, the API, the command line, the event stream) ever sees more.
"""

from __future__ import annotations

import functools
import re
from typing import Any

from ..core import config

MASK = "••••••••"
DEFAULT = r"api|token|key|secret|pass|pwd|signature|cookie|session|auth|credential|private"
MAX_NOTE = 1000  # characters a progress note keeps: a line or two for a person, never a payload
# name=value, name: value, "name": "value"; the value a quoted string, a scheme and its credentials
# ("Bearer abc"), or a word up to a space or a separator. A name starts only where a word does and
# is taken whole (*+), so a long note costs one pass, not one per character.
PAIR = re.compile(r"""(?<![\w.-])(["']?)([A-Za-z_][\w.-]*+)\1(\s*[:=]\s*)"""
                  r"""("[^"]*"|'[^']*'|(?:bearer|basic|token)\s+\S+|[^\s,;&?]+)""", re.IGNORECASE)


@functools.lru_cache(maxsize=8)
def _compiled(source: str) -> re.Pattern:
    return re.compile(source, re.IGNORECASE)


def secret(name: Any) -> bool:
    """Whether a parameter, key or field of this name holds a secret (EMQ_MASK)."""
    return bool(_compiled(config.get("EMQ_MASK") or DEFAULT).search(str(name)))


def in_text(text: str) -> str:
    """Text with the value of each ``name=value`` (or ``name: value``) whose name is secret replaced by MASK."""
    if "=" not in text and ":" not in text:  # most notes: "step 3 of 10"
        return text
    return PAIR.sub(_masked_pair, text)


def _masked_pair(m: re.Match) -> str:
    if not secret(m.group(2)):
        return m.group(0)
    return m.group(0)[: m.start(4) - m.start(0)] + MASK


def cut(note: Any) -> str:
    """A progress note of at most MAX_NOTE characters: a longer one keeps its start and says how long it was."""
    note = note if isinstance(note, str) else str(note)
    if len(note) <= MAX_NOTE:
        return note
    return f"{note[:MAX_NOTE]}… [cut: {len(note):,} characters]"
