"""Django's error page without emq's secrets: ``DEFAULT_EXCEPTION_REPORTER_FILTER = "emq.reporter.Filter"``.

Django hides settings whose names look secret (KEY, PASS, TOKEN…); a URL setting such as
``EMQ_URL`` or ``DATABASE_URL`` carries its password inside, under a name that does not. This
filter masks the password inside every ``*_URL`` setting and scrubs the same passwords from the
traceback's local variables (a frame may hold the URL in a variable of any name).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.views.debug import SafeExceptionReporterFilter

from .core.connection import mask


class Filter(SafeExceptionReporterFilter):
    """Django's safe filter, plus URL passwords masked everywhere on the page."""

    def cleanse_setting(self, key: Any, value: Any) -> Any:
        if isinstance(key, str) and key.endswith("URL") and isinstance(value, str):
            return mask(value)
        return super().cleanse_setting(key, value)

    def get_traceback_frame_variables(self, request: Any, tb_frame: Any) -> Any:
        secrets = _url_passwords()
        cleaned = super().get_traceback_frame_variables(request, tb_frame)
        if not secrets:
            return cleaned
        return [(name, _scrub(value, secrets)) for name, value in cleaned]


def _url_passwords() -> list[str]:
    found = []
    for name in dir(settings):
        value = getattr(settings, name, None) if name.endswith("URL") else None
        if isinstance(value, str) and "://" in value and (password := urlsplit(value).password):
            found.append(password)
    return found


def _scrub(value: Any, secrets: list[str]) -> Any:
    text = value if isinstance(value, str) else repr(value)
    if not any(s in text for s in secrets):
        return value
    for s in secrets:
        text = text.replace(s, "***")
    return text
