"""Read a job's stored fields leniently: a quarantined (corrupt) job must stay readable in
``get_job`` and the dashboard, its broken field shown as it is stored."""

from __future__ import annotations

import json
from typing import Any


def loose(text: str) -> Any:
    """A stored JSON field, or its raw text when it is corrupt (or nests deeper than the parser goes)."""
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return text


def whole(text: str | None) -> int:
    """A stored count, or 0 when it is corrupt (the raw field stays in the hash)."""
    try:
        return int(text or 0)
    except ValueError:
        return 0
