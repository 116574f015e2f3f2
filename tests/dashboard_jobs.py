"""Jobs the dashboard's browser tests run on an in-process worker."""

from __future__ import annotations

import os

import emq


@emq.job(max_attempts=1)
def needs_file(path: str, token: str = "") -> str:
    """Fails until the file exists: dead on its first run, completes when retried after the file appears."""
    if not os.path.exists(path):
        raise FileNotFoundError(f"{path} does not exist yet")
    return "found"
