"""Django's settings as emq's settings: installs the reader ``emq.core.config`` uses.

Imported by ``emq/__init__.py``, so the reader is in place before any part of emq runs. Values
are read at call time, never at import time, so ``override_settings`` is seen at once.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings

from .core import config


def _read(name: str, default: Any) -> Any:
    value = getattr(settings, name, default)
    if name == "EMQ_DATA_DIR" and not value:
        return Path(getattr(settings, "BASE_DIR", Path.cwd())) / ".emq"
    return value


config.install(_read)
get = config.get
DEFAULTS = config.DEFAULTS
