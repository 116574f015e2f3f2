"""The emq Django app: settings hooks, system checks and job discovery."""

from __future__ import annotations

import importlib

from django.apps import AppConfig, apps
from django.core.signals import setting_changed
from django.utils.module_loading import module_has_submodule


def _settings_changed(setting: str, **kwargs) -> None:
    # Clients are cached per server (see connection.get_client), so they need no reset here:
    # closing one would break code still holding it (a cluster client cannot reconnect).
    if setting in ("EMQ_URL", "EMQ_PREFIX", "EMQ_CLUSTER", "EMQ_DATA_DIR"):
        from . import jobs

        jobs._known_queues.clear()


class EmqConfig(AppConfig):
    name = "emq"
    verbose_name = "Jobs (emq)"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.db.models.signals import post_delete, post_save

        from . import checks, recurrences  # noqa: F401  (checks registers the system checks)

        setting_changed.connect(_settings_changed, dispatch_uid="emq-settings")
        recurrence = self.get_model("Recurrence")
        post_save.connect(recurrences.on_save, sender=recurrence, dispatch_uid="emq-recurrence-save")
        post_delete.connect(recurrences.on_delete, sender=recurrence, dispatch_uid="emq-recurrence-delete")


def autodiscover() -> list[str]:
    """Import every installed app's ``jobs`` module and each of EMQ_IMPORTS; returns what was imported."""
    from . import conf

    imported = []
    for app in apps.get_app_configs():
        if module_has_submodule(app.module, "jobs"):
            importlib.import_module(f"{app.name}.jobs")
            imported.append(f"{app.name}.jobs")
    for module in conf.get("EMQ_IMPORTS"):
        importlib.import_module(module)
        imported.append(module)
    return imported
