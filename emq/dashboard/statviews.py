"""The dashboard's statistics: the Statistics page (a queue's chart and its job names, or one job name's
chart) and the JSON its charts poll to stay live (``chart``).

A page that shows a chart includes ``admin/emq/dashboard/_chart.html`` with
``chart=statistics.chart_context(queue, name, span)``: the SVG drawn now, and where its script fetches the next one.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, JsonResponse

from . import statistics
from .views import _int, render, selected_queue, url


def statistics_page(model_admin: Any, request: HttpRequest) -> HttpResponse:
    """A queue's chart and its job names (each with its last hour), or one job name's chart."""
    if not model_admin.has_view_permission(request):
        raise PermissionDenied
    queue = selected_queue(request.GET)
    name, span = request.GET.get("name", "").strip(), request.GET.get("span", "")
    chart = statistics.chart_context(queue, name, span)
    logical = chart["queue"]
    rows, following = ([], None) if name else statistics.names(queue, _int(request, "pos"))
    title = f"Statistics of {name} — {logical}" if name else f"Statistics — {logical}"
    return render(model_admin, request, "statistics", title, "statistics", chart=chart, name=name, now_ms=0,
                  rows=[(r, url("statistics", queue=logical, name=r.name, span=span)) for r in rows],
                  back=url("statistics", queue=logical, span=span) if name else None,
                  next_url=url("statistics", queue=logical, pos=following) if following else None)


def chart(model_admin: Any, request: HttpRequest) -> HttpResponse:
    """One chart as JSON (``statistics.Chart.as_dict``): its figures, and its SVG for the page to swap in."""
    if not model_admin.has_view_permission(request):
        raise PermissionDenied
    queue = selected_queue(request.GET)
    c = statistics.chart(queue, request.GET.get("name", "").strip(), statistics.span_of(request.GET.get("span", "")))
    return JsonResponse(c.as_dict())
