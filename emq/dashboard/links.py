"""The URL of a dashboard page: one place that spells the admin's URL names (``emq_dashboard_<page>``)."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.urls import reverse


def url(page: str, /, **params: Any) -> str:
    """The URL of a dashboard page with a query string of the non-empty params."""
    query = urlencode({k: v for k, v in params.items() if v not in (None, "")})
    return reverse(f"admin:emq_dashboard_{page}") + (f"?{query}" if query else "")


def page_urls() -> dict[str, str]:
    """The pages a list links each of its rows to, reversed once a page rather than once a row."""
    action = reverse("admin:emq_dashboard_action", args=["-"])
    return {**{name: reverse(f"admin:emq_dashboard_{name}") for name in ("job", "name", "leases", "ready")},
            "action": action[: action.rindex("-")]}
