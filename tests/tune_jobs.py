"""A job the worker-settings tests count while it runs (tests/test_worker_settings.py); worker processes get
this module through EMQ_IMPORTS."""

from __future__ import annotations

import os
import time
import uuid

import emq


@emq.job
def hold(folder, seconds):
    """Keep a file in folder while it runs: a test counts the files to count the jobs running at once."""
    path = os.path.join(folder, uuid.uuid4().hex)
    with open(path, "w"):
        pass
    try:
        time.sleep(seconds)
    finally:
        os.unlink(path)
