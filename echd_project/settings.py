"""Settings for the echd project, read from the environment with django-environ.

Safe by default: DEBUG is off unless set (``make run`` sets DEBUG=1 for development), and with
DEBUG off the development SECRET_KEY is refused by whatever serves HTTP or vets the deployment
(wsgi.py, runserver, emq_up, check). Production sets SECRET_KEY, ALLOWED_HOSTS,
SECURE_SSL_REDIRECT=1 and, behind a TLS proxy, SECURE_PROXY_SSL_HEADER=1; ``manage.py check
--deploy`` is then clean.
"""

import sys
from pathlib import Path

import django
import environ
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent

env = environ.Env(
    DEBUG=(bool, False),
    EMQ_URL=(str, ""),
    EMQ_PREFIX=(str, "emq"),
    EMQ_IMPORTS=(list, []),
    EMQ_CLUSTER=(bool, False),
    EMQ_PUMP_PARK=(float, 15.0),
    EMQ_DURABLE=(str, ""),
    EMQ_DURABLE_TIMEOUT=(float, 1.0),
)
environ.Env.read_env(BASE_DIR / ".env", overwrite=False)

DEBUG = env("DEBUG")
DEV_SECRET_KEY = "dev-only-insecure-key-change-me"  # accepted only with DEBUG on, or under the test runner
SECRET_KEY = env("SECRET_KEY", default=DEV_SECRET_KEY)
DEV_KEY_REFUSAL = (
    "SECRET_KEY is the development key while DEBUG is off: set SECRET_KEY in the environment "
    "(python -c 'import secrets; print(secrets.token_urlsafe(50))'), or DEBUG=1 for development"
)
# The key signs sessions and CSRF tokens, so whatever serves HTTP (wsgi.py, runserver, emq_up) or
# vets a deployment (check) refuses the development key with DEBUG off. Workers, Pumps and scripts
# that only call django.setup() sign nothing and may start with it.
INSECURE_KEY = SECRET_KEY == DEV_SECRET_KEY and not DEBUG and "pytest" not in sys.modules
if INSECURE_KEY and sys.argv[1:2] and sys.argv[1] in {"runserver", "emq_up", "check"}:
    raise ImproperlyConfigured(DEV_KEY_REFUSAL)
ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=["127.0.0.1", "localhost"])

# Production hardening, on whenever DEBUG is off (`manage.py check --deploy` is clean then).
SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = not DEBUG
SECURE_SSL_REDIRECT = env.bool("SECURE_SSL_REDIRECT", default=False)  # production sets it (or its proxy redirects)
SECURE_HSTS_SECONDS = env.int("SECURE_HSTS_SECONDS", default=0 if DEBUG else 31_536_000)
SECURE_HSTS_INCLUDE_SUBDOMAINS = SECURE_HSTS_PRELOAD = not DEBUG
if env.bool("SECURE_PROXY_SSL_HEADER", default=False):  # TLS ends at a proxy that sets X-Forwarded-Proto
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
# Django's error page masks the password inside EMQ_URL and DATABASE_URL too.
DEFAULT_EXCEPTION_REPORTER_FILTER = "emq.reporter.Filter"

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "emq",
    "demo",
]
if django.VERSION < (6, 0):
    INSTALLED_APPS.append("django_tasks")  # the backport of django.tasks for Django 5.2

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "echd_project.urls"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

WSGI_APPLICATION = "echd_project.wsgi.application"

DATABASES = {"default": env.db("DATABASE_URL", default=f"sqlite:///{BASE_DIR / 'db.sqlite3'}")}
if DATABASES["default"]["ENGINE"].endswith("sqlite3") and DATABASES["default"]["NAME"] not in ("", ":memory:"):
    # A SQLite file shared by the web's requests and the workers' threads: WAL, IMMEDIATE transactions and
    # a busy timeout, or they fail with "database is locked" (emq.W002; docs/guides/deploying.md, SQLite).
    DATABASES["default"]["OPTIONS"] = {
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        "transaction_mode": "IMMEDIATE",
        "timeout": 20,
        **DATABASES["default"].get("OPTIONS", {}),
    }
if env("DATABASE_TEST_NAME", default=""):  # runs sharing one PostgreSQL each take their own test database
    DATABASES["default"]["TEST"] = {"NAME": env("DATABASE_TEST_NAME")}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

LANGUAGE_CODE = "en-us"
TIME_ZONE = env("TIME_ZONE", default="UTC")
USE_I18N = True
USE_TZ = True
STATIC_URL = "static/"

# emq: without EMQ_URL an embedded Valkey is started with its data in EMQ_DATA_DIR.
EMQ_URL = env("EMQ_URL")
EMQ_PREFIX = env("EMQ_PREFIX")
EMQ_IMPORTS = env("EMQ_IMPORTS")
EMQ_CLUSTER = env("EMQ_CLUSTER")
EMQ_PARTITIONS = env.json("EMQ_PARTITIONS", default={})  # e.g. {"clicks": 6}
EMQ_PUMP_PARK = env("EMQ_PUMP_PARK")  # seconds an idle Pump parks at most (see emq/conf.py)
EMQ_DURABLE = env("EMQ_DURABLE")  # "fsync" | "replica": enqueue waits until its jobs survive a crash / failover
EMQ_DURABLE_TIMEOUT = env("EMQ_DURABLE_TIMEOUT")  # seconds that wait may last before NotDurable
EMQ_GROUP_LIMITS = env.json("EMQ_GROUP_LIMITS", default={})  # {"queue": {"group": cap}}, applied at worker start
EMQ_RATE_LIMITS = env.json("EMQ_RATE_LIMITS", default={})  # {"queue": {"group" | "*": "100/60"}}, at worker start
EMQ_RECORD_FORMAT = env.str("EMQ_RECORD_FORMAT", default="1")  # "2": a job's record packed in one value
EMQ_DEFAULT_TIMEOUT = env.float("EMQ_DEFAULT_TIMEOUT", default=3600.0)  # seconds an attempt may run (a job's timeout=)
EMQ_TIMEOUT_GRACE = env.float("EMQ_TIMEOUT_GRACE", default=30.0)  # seconds a stopped job's thread may take to return
EMQ_MAX_ABANDONED = env.int("EMQ_MAX_ABANDONED", default=4)  # stuck threads after which a worker drains and exits
EMQ_KEEP_COMPLETED = env.int("EMQ_KEEP_COMPLETED", default=100_000)  # completed jobs kept per queue, at most
EMQ_ASYNC_SLOTS = env.int("EMQ_ASYNC_SLOTS", default=100)  # async def jobs a worker runs besides its threads
EMQ_UNKNOWN_GRACE = env.float("EMQ_UNKNOWN_GRACE", default=600.0)  # seconds a job of a name no worker knows waits
EMQ_UNKNOWN_DELAY = tuple(env.json("EMQ_UNKNOWN_DELAY", default=[1.0, 60.0]))  # (first, cap) seconds it is held off
EMQ_DATA_DIR = env("EMQ_DATA_DIR", default=str(BASE_DIR / ".emq"))  # the embedded Valkey's folder

# Django's Tasks framework (@task) on emq: queue_name is the emq queue; see emq/backends.py.
TASKS = {"default": {"BACKEND": "emq.backends.EmqBackend", "QUEUES": ["default"]}}

# emq's operations settings (see emq/core/config.py): JSON log lines, the completed-job line,
# the scrape endpoint's token, the worker's metrics port, how long commands wait for Valkey at start.
EMQ_LOG_FORMAT = env("EMQ_LOG_FORMAT", default="text")
EMQ_LOG_COMPLETED = env.bool("EMQ_LOG_COMPLETED", default=True)
EMQ_METRICS_TOKEN = env("EMQ_METRICS_TOKEN", default="")
EMQ_API_TOKENS = env.json("EMQ_API_TOKENS", default={})  # {"name": {"token": ..., "scopes": [...]}} (emq.api)
EMQ_METRICS_PORT = env.int("EMQ_METRICS_PORT", default=None)
EMQ_STARTUP_WAIT = env.float("EMQ_STARTUP_WAIT", default=None)
EMQ_EVENTS = env.bool("EMQ_EVENTS", default=False)  # every state change in a capped stream per queue (emq.events)
EMQ_EVENTS_MAX = env.int("EMQ_EVENTS_MAX", default=10_000)  # stream entries kept per queue, about

# The root's handler shows job code's own log lines as well as emq's (and Django's, once each).
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env("LOG_LEVEL", default="INFO")},
    "loggers": {
        "emq": {"level": env("EMQ_LOG_LEVEL", default="INFO")},
        "django": {"level": "INFO"},
    },
}
