"""Django settings of tests/test_upgrade.py's processes, old (the v0.2.0 wheel, which ships no project)
and new (this tree): the app emq alone, a SQLite file for the recurrence rows, the server from the
environment. Only what both releases read."""

import os

SECRET_KEY = "upgrade-test-only-key-not-a-secret"
DEBUG = False
INSTALLED_APPS = ["emq"]
DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": os.environ["UPGRADE_DB"]}}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
USE_TZ = True
TIME_ZONE = "UTC"
EMQ_URL = os.environ["EMQ_URL"]
EMQ_IMPORTS = ["upgrade_jobs"]
