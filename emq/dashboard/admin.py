"""The job dashboard's admin entry: the unmanaged ``Dashboard`` model with its pages as admin views."""

from __future__ import annotations

from collections.abc import Callable
from functools import update_wrapper
from typing import Any

from django.contrib import admin
from django.http import HttpRequest, HttpResponse
from django.urls import URLPattern, path

from ..errors import ServerUnavailable
from ..models import Dashboard
from . import actions, bulkviews, flowviews, nameviews, statviews, views

PAGES: dict[str, Callable[..., HttpResponse]] = {
    "lanes": views.lanes,
    "leases": views.leases,
    "stalled": views.stalled,
    "scheduled": views.scheduled,
    "completed": views.completed,
    "dead": views.dead,
    "cancelled": views.cancelled,
    "ready": views.ready,
    "job": views.job,
    "find": views.find,
    "waiting": flowviews.waiting,
    "flows": flowviews.flows,
    "flow": flowviews.flow,
    "feed": flowviews.feed,
    "bulk": bulkviews.step,
    "name": nameviews.name,
    "statistics": statviews.statistics_page,
    "chart": statviews.chart,
}


@admin.register(Dashboard)
class DashboardAdmin(admin.ModelAdmin):
    """No rows to list or edit: the changelist is the overview and every page is a custom view."""

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def get_urls(self) -> list[URLPattern]:
        urls = [path("", self._wrap(views.overview), name="emq_dashboard_changelist")]
        urls += [path(f"{name}/", self._wrap(view), name=f"emq_dashboard_{name}") for name, view in PAGES.items()]
        urls.append(path("action/<str:action>/", self._wrap(actions.dispatch), name="emq_dashboard_action"))
        return urls

    def _wrap(self, view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
        """Bind the view to this admin, behind the admin's login and staff check."""

        def inner(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            try:
                return view(self, request, *args, **kwargs)
            except ServerUnavailable as exc:
                return views.unavailable(request, exc)

        return self.admin_site.admin_view(update_wrapper(inner, view))
