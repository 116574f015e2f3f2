"""Django's settings as emq's settings: installs the reader ``emq.core.config`` uses.

Imported by ``emq/__init__.py``, so the reader is in place before any part of emq runs. Values
are read at call time, never at import time, so ``override_settings`` is seen at once; the few
values the hot paths derive from them (``config.memo``) are dropped on Django's ``setting_changed``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.signals import setting_changed
from django.utils.functional import empty

from .core import config

# The lazy proxy's own attributes; "_wrapped" is the settings object it stands for (Django swaps it
# in place for override_settings, never this dict).
_proxy = object.__getattribute__(settings, "__dict__")


def _read(name: str, default: Any) -> Any:
    # The settings object itself, not the lazy proxy: through the proxy a setting the project
    # leaves unset raises and catches AttributeError on every read, and an enqueue reads a dozen
    # settings. The wrapped object is what the proxy reads too, override_settings included.
    wrapped = _proxy.get("_wrapped", empty)
    value = getattr(settings if wrapped is empty else wrapped, name, default)
    if name == "EMQ_DATA_DIR" and not value:
        return Path(getattr(settings, "BASE_DIR", Path.cwd())) / ".emq"
    return value


def _changed(**kwargs: Any) -> None:
    config.changed()  # any setting: EMQ_DATA_DIR falls back to BASE_DIR


def _source() -> Any:
    """The object settings are read from now: override_settings puts another in its place."""
    return _proxy.get("_wrapped", empty)


config.install(_read, _source)
setting_changed.connect(_changed, dispatch_uid="emq-config-epoch")
get = config.get
DEFAULTS = config.DEFAULTS
