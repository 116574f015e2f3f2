"""Repeat: recurrences whose every occurrence is minted as a fresh job (filled in by the time issue)."""

from __future__ import annotations

from .engine import Queue


def mint_due(queue: Queue) -> int:
    """Mint the due occurrences of the queue's recurrences; returns how many jobs were minted."""
    return 0
