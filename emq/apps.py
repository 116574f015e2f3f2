"""The emq Django app: settings hooks, signals, system checks and the tasks adapter's resolver."""

from __future__ import annotations

import contextlib

from django.apps import AppConfig
from django.core.signals import setting_changed


def _settings_changed(setting: str, **kwargs) -> None:
    # Clients are cached per server (see core.connection.get_client), so they need no reset here:
    # closing one would break code still holding it (a cluster client cannot reconnect).
    if setting in ("EMQ_URL", "EMQ_PREFIX", "EMQ_CLUSTER", "EMQ_DATA_DIR"):
        from .core import registry

        registry.forget_all()


class EmqConfig(AppConfig):
    name = "emq"
    verbose_name = "Jobs (emq)"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.db.models.signals import post_delete, post_save

        from . import checks, models  # noqa: F401  (checks registers the system checks)

        setting_changed.connect(_settings_changed, dispatch_uid="emq-settings")
        post_save.connect(models.on_save, sender=models.Recurrence, dispatch_uid="emq-recurrence-save")
        post_delete.connect(models.on_delete, sender=models.Recurrence, dispatch_uid="emq-recurrence-delete")
        with contextlib.suppress(ImportError):  # no Django Tasks framework: nothing to adapt
            from .contrib.tasks import install

            install()
