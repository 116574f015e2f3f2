"""The job-name page: one job name's options, recurrences, rate limits, newest runs and failures by class
(``jobnames``), reached from the name of a job in any list."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect

from ..core import topology
from . import jobnames
from .views import render, url


def name(model_admin: Any, request: HttpRequest) -> HttpResponse:
    if not model_admin.has_view_permission(request):
        raise PermissionDenied
    fn = request.GET.get("fn", "").strip()
    if not fn:
        return HttpResponseRedirect(url("changelist"))
    asked = request.GET.get("queue", "").strip()
    data = jobnames.page(fn, topology.names(asked)[0] if asked else "")
    lists = {f"{page}_url": url(page, queue=data.queue, fn=fn) for page in ("completed", "dead", "scheduled")}
    return render(model_admin, request, "", f"Job name {fn}", "name", queue=data.queue, data=data,
                  now_ms=data.now_ms, **lists)
