"""Settings for the echd project, read from the environment with django-environ."""

from pathlib import Path

import django
import environ

BASE_DIR = Path(__file__).resolve().parent.parent

env = environ.Env(
    DEBUG=(bool, True),
    EMQ_URL=(str, ""),
    EMQ_PREFIX=(str, "emq"),
    EMQ_IMPORTS=(list, []),
    EMQ_CLUSTER=(bool, False),
    EMQ_PUMP_PARK=(float, 15.0),
)
environ.Env.read_env(BASE_DIR / ".env", overwrite=False)

# A development key: every deployment sets SECRET_KEY in its environment.
SECRET_KEY = env("SECRET_KEY", default="dev-only-insecure-key-change-me")
DEBUG = env("DEBUG")
ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=["127.0.0.1", "localhost"])

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
EMQ_GROUP_LIMITS = env.json("EMQ_GROUP_LIMITS", default={})  # {"queue": {"group": cap}}, applied at worker start
EMQ_DATA_DIR = BASE_DIR / ".emq"

# Django's Tasks framework (@task) on emq: queue_name is the emq queue; see emq/backends.py.
TASKS = {"default": {"BACKEND": "emq.backends.EmqBackend", "QUEUES": ["default"]}}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "loggers": {"emq": {"handlers": ["console"], "level": env("EMQ_LOG_LEVEL", default="INFO")}},
}
