"""System checks: settings emq cannot work with are reported by ``manage.py check``."""

from __future__ import annotations

from django.core import checks

from .core import config as conf
from .core import embedded


@checks.register()
def check_settings(app_configs, **kwargs):
    errors = []
    url = conf.get("EMQ_URL")
    if url and url.split("://", 1)[0] not in ("redis", "rediss", "unix"):
        errors.append(checks.Error("EMQ_URL must be a redis://, rediss:// or unix:// URL", id="emq.E001"))
    if conf.get("EMQ_CLUSTER") and not url:
        errors.append(checks.Error("EMQ_CLUSTER needs EMQ_URL naming a node of the cluster", id="emq.E002"))
    if "{" in conf.get("EMQ_PREFIX") or "}" in conf.get("EMQ_PREFIX"):
        errors.append(checks.Error("EMQ_PREFIX must not contain braces (they are the hash tag)", id="emq.E003"))
    if not url and not conf.get("EMQ_EAGER") and not embedded.available():
        errors.append(checks.Warning(embedded.MISSING, id="emq.W001"))
    if conf.get("EMQ_LOG_FORMAT") not in ("text", "json"):
        errors.append(checks.Error("EMQ_LOG_FORMAT must be 'text' or 'json'", id="emq.E004"))
    return errors
