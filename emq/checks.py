"""System checks: settings emq cannot work with are reported by ``manage.py check``."""

from __future__ import annotations

import importlib.util
import re
from typing import Any

from django.core import checks
from django.db import DEFAULT_DB_ALIAS, connections

from .api.auth import token_problems
from .core import config as conf
from .core import embedded, sealed
from .core.connection import client_url
from .errors import ConfigurationError

# What a file SQLite database needs so a worker's threads and the web's requests take turns instead of
# failing with "database is locked": WAL (readers and the writer no longer block each other), IMMEDIATE
# transactions (a transaction takes the write lock when it begins, where the busy timeout applies, not
# when it first writes: a deferred one's upgrade fails at once), and a busy timeout to wait that long.
SQLITE_OPTIONS = {
    "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    "transaction_mode": "IMMEDIATE",
    "timeout": 20,
}
_WAL = re.compile(r"journal_mode\s*=\s*['\"]?wal\b", re.IGNORECASE)


@checks.register()
def check_settings(app_configs, **kwargs):
    errors = []
    url = conf.get("EMQ_URL")
    try:
        client_url(url) if url else None
    except ConfigurationError as exc:
        errors.append(checks.Error(str(exc), id="emq.E001"))
    if conf.get("EMQ_CLUSTER") and not url:
        errors.append(checks.Error("EMQ_CLUSTER needs EMQ_URL naming a node of the cluster", id="emq.E002"))
    if "{" in conf.get("EMQ_PREFIX") or "}" in conf.get("EMQ_PREFIX"):
        errors.append(checks.Error("EMQ_PREFIX must not contain braces (they are the hash tag)", id="emq.E003"))
    if not url and not conf.get("EMQ_EAGER") and not embedded.available():
        errors.append(checks.Warning(embedded.MISSING, id="emq.W001"))
    if conf.get("EMQ_LOG_FORMAT") not in ("text", "json"):
        errors.append(checks.Error("EMQ_LOG_FORMAT must be 'text' or 'json'", id="emq.E004"))
    errors += [checks.Error(problem, id="emq.E020") for problem in token_problems()]  # the HTTP API (emq.api)
    return errors + _unknown_names() + check_encryption() + check_sqlite()


def check_encryption() -> list[checks.CheckMessage]:
    """EMQ_ENCRYPTION_KEYS that are not Fernet keys; EMQ_ENCRYPT without keys, or without cryptography.
    (A job's own encrypt=True without keys is refused at its enqueue, saying the same.)"""
    keys, everything = conf.get("EMQ_ENCRYPTION_KEYS"), conf.get("EMQ_ENCRYPT")
    errors = [checks.Error(problem, id="emq.E030") for problem in sealed.key_problems(keys)]
    if everything and not keys:
        errors.append(checks.Error(
            "EMQ_ENCRYPT is on but EMQ_ENCRYPTION_KEYS is empty: every enqueue would fail", id="emq.E031",
            hint="make a key with cryptography.fernet.Fernet.generate_key() and set EMQ_ENCRYPTION_KEYS = [key], "
                 "read from the environment, never from the repository (the Security guide)"))
    if (everything or keys) and importlib.util.find_spec("cryptography") is None:
        errors.append(checks.Error(sealed.INSTALL, id="emq.E032"))
    return errors


def _unknown_names() -> list[checks.CheckMessage]:
    """How long a job of a name no worker knows waits, and how long it is held off each time."""
    errors = []
    grace, delay = conf.get("EMQ_UNKNOWN_GRACE"), conf.get("EMQ_UNKNOWN_DELAY")
    if not isinstance(grace, int | float) or grace < 0:
        errors.append(checks.Error(f"EMQ_UNKNOWN_GRACE must be seconds >= 0, not {grace!r}", id="emq.E005"))
    pair = isinstance(delay, tuple | list) and len(delay) == 2 and all(isinstance(s, int | float) for s in delay)
    if not pair or not 0 < delay[0] <= delay[1]:
        errors.append(checks.Error(
            f"EMQ_UNKNOWN_DELAY must be (first, cap) seconds with 0 < first <= cap, not {delay!r}", id="emq.E006"))
    return errors


def check_sqlite() -> list[checks.CheckMessage]:
    """Warn when the default database is a SQLite file that workers would find locked (no worker: eager)."""
    if DEFAULT_DB_ALIAS not in connections.settings or conf.get("EMQ_EAGER"):
        return []
    db = connections[DEFAULT_DB_ALIAS]
    if db.vendor != "sqlite" or db.is_in_memory_db():
        return []
    gaps = sqlite_gaps(db.settings_dict.get("OPTIONS") or {})
    if not gaps:
        return []
    return [checks.Warning(
        f"DATABASES['default'] is SQLite without {_listed(gaps)}: a worker's threads and the web's requests "
        'will fail with "database is locked" as soon as they write at the same time',
        hint=f"add to DATABASES['default']: 'OPTIONS': {SQLITE_OPTIONS!r} (the Deploying guide, SQLite)",
        id="emq.W002",
    )]


def sqlite_gaps(options: dict[str, Any]) -> list[str]:
    """What a SQLite database's OPTIONS lack of ``SQLITE_OPTIONS``' three parts, each named as the warning says it."""
    gaps = []
    if not _WAL.search(str(options.get("init_command") or "")):
        gaps.append("WAL (init_command 'PRAGMA journal_mode=WAL')")
    if str(options.get("transaction_mode") or "").upper() not in ("IMMEDIATE", "EXCLUSIVE"):
        gaps.append("transaction_mode 'IMMEDIATE'")
    if not options.get("timeout"):
        gaps.append("a busy timeout ('timeout' in seconds)")
    return gaps


def _listed(parts: list[str]) -> str:
    return parts[0] if len(parts) == 1 else f"{', '.join(parts[:-1])} and {parts[-1]}"
