"""The dashboard's pages: each checks the view permission, reads through one query, renders."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

import django
from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme

from ..core import config, keys, topology
from ..core.engine import Queue
from ..errors import EmqError
from . import flowlists, lists, present, queries, rates
from .scan import SCAN_BUDGET, Filters, Slice

TABS = (
    ("changelist", "Overview"), ("lanes", "Lanes"), ("leases", "Leases"), ("stalled", "Stalled"),
    ("waiting", "Waiting"), ("scheduled", "Scheduled"), ("completed", "Completed"), ("dead", "Dead letter"),
    ("cancelled", "Cancelled"), ("flows", "Flows"),
)
STATE_TABS = ("waiting", "scheduled", "completed", "dead", "cancelled")  # lists that share filters


def url(page: str, /, **params: Any) -> str:
    """The URL of a dashboard page with a query string of the non-empty params."""
    query = urlencode({k: v for k, v in params.items() if v not in (None, "")})
    return reverse(f"admin:emq_dashboard_{page}") + (f"?{query}" if query else "")


def recurrence_jobs_url(queue: str, recurrence: str, state: str = "completed") -> str:
    """Where a recurrence links to the jobs it minted: a list filtered by origin ``repeat:<name>``."""
    return url(state, queue=queue, origin=f"repeat:{recurrence}")


def selected_queue(params: Any) -> str:
    """The physical queue a page or action is about (a partitioned queue's name: its first partition)."""
    name = params.get("queue", "").strip() or config.get("EMQ_DEFAULT_QUEUE")
    return topology.names(name)[0]


MAX_POSITION = 2**31  # paging past any real set: an empty page, never a server error


def _int(request: HttpRequest, name: str) -> int:
    try:
        return min(max(int(request.GET.get(name, 0)), 0), MAX_POSITION)
    except ValueError:
        return 0


def render(model_admin: Any, request: HttpRequest, tab: str, title: str, template: str, **extra: Any) -> HttpResponse:
    """Render a page inside the admin, with the tabs, the queue picker and the permissions."""
    if not model_admin.has_view_permission(request):
        raise PermissionDenied
    queue = extra.pop("queue", selected_queue(request.GET))
    context = {
        **model_admin.admin_site.each_context(request),
        "opts": model_admin.model._meta,
        "crumbs_ol": django.VERSION >= (6, 0),  # Django 6 lists breadcrumbs in an <ol>
        "title": title,
        "tab": tab,
        "queue": queue,
        "queues": queries.known_queues(),
        "tabs": [(name, label, url(name, queue=queue)) for name, label in TABS],
        "can_change": model_admin.has_change_permission(request),
        "here": request.get_full_path(),
        "feed": url("feed", queue=queue) if config.get("EMQ_EVENTS") else "",
        **extra,
    }
    return TemplateResponse(request, f"admin/emq/dashboard/{template}.html", context)


def overview(model_admin: Any, request: HttpRequest) -> HttpResponse:
    if not model_admin.has_view_permission(request):
        raise PermissionDenied
    data = queries.overview(_int(request, "qc"), _int(request, "wc"))
    peak = max([c + f for _, c, f in data.minutes] + [1])
    more_queues = url("changelist", qc=data.queue_cursor, wc=request.GET.get("wc")) if data.queue_cursor else None
    more_workers = url("changelist", wc=data.worker_cursor, qc=request.GET.get("qc")) if data.worker_cursor else None
    return render(
        model_admin, request, "changelist", "Job dashboard", "overview", data=data, now_ms=data.now_ms,
        bars=[(present.exact(t)[11:16], c, f, 100 * c / peak, 100 * f / peak) for t, c, f in data.minutes],
        totals=(sum(c for _, c, _ in data.minutes), sum(f for _, _, f in data.minutes)),
        more_queues=more_queues, more_workers=more_workers, pump_park=config.get("EMQ_PUMP_PARK"), live=True,
    )


def lanes(model_admin: Any, request: HttpRequest) -> HttpResponse:
    if not model_admin.has_view_permission(request):
        raise PermissionDenied
    queue = selected_queue(request.GET)
    data = queries.lanes(queue, _int(request, "pos"), _int(request, "lc"))
    rate_rows, holds = rates.rows(Queue(queue, prefix=queries.prefix()))
    return render(
        model_admin, request, "lanes", f"Lanes of {queue}", "lanes", data=data, now_ms=data.now_ms,
        rate_rows=rate_rows, holds=holds,
        ring_next=url("lanes", queue=queue, pos=data.ring_next) if data.ring_next else None,
        ring_prev=url("lanes", queue=queue, pos=max(data.ring_start - 50, 0)) if data.ring_start else None,
        lanes_next=url("lanes", queue=queue, lc=data.lanes_cursor) if data.lanes_cursor else None,
    )


def ready(model_admin: Any, request: HttpRequest) -> HttpResponse:
    """One lane's ready jobs in claim order, a page at a time (reached from the Lanes page)."""
    if not model_admin.has_view_permission(request):
        raise PermissionDenied
    queue = selected_queue(request.GET)
    group = request.GET.get("group", "").strip() or keys.DEFAULT_GROUP
    data = lists.ready(queue, group, _int(request, "pos"))
    pager = _pager("ready", data.slice, {"queue": queue, "group": group})
    return render(
        model_admin, request, "lanes", f"Ready in lane {group} — {queue}", "ready", data=data, now_ms=data.now_ms,
        rows=data.slice.rows, slice=data.slice, group=group, **pager,
    )


def _job_list(model_admin: Any, request: HttpRequest, tab: str, title: str, read: Any) -> HttpResponse:
    if not model_admin.has_view_permission(request):
        raise PermissionDenied
    queue, filters = selected_queue(request.GET), Filters.from_query(request.GET)
    data = read(queue, _int(request, "pos"), filters)
    keep = {"queue": queue, "name": filters.name, "group": filters.group, "origin": filters.origin}
    return render(
        model_admin, request, tab, f"{title} — {queue}", tab, data=data, now_ms=data.now_ms, filters=filters,
        rows=data.slice.rows, slice=data.slice, budget=SCAN_BUDGET, **_pager(tab, data.slice, keep),
        state_links=[(n, label, url(n, **keep)) for n, label in TABS if n in STATE_TABS],
    )


def _pager(tab: str, s: Slice, keep: dict[str, str]) -> dict[str, str | None]:
    return {
        "next_url": url(tab, pos=s.next, **keep) if s.next is not None else None,
        "prev_url": url(tab, pos=s.prev, **keep) if s.prev is not None else None,
        "first_url": url(tab, **keep) if s.start else None,
    }


def leases(model_admin: Any, request: HttpRequest) -> HttpResponse:
    return _job_list(model_admin, request, "leases", "Leases", lists.leases)


def stalled(model_admin: Any, request: HttpRequest) -> HttpResponse:
    return _job_list(model_admin, request, "stalled", "Stalled", lists.stalled)


def scheduled(model_admin: Any, request: HttpRequest) -> HttpResponse:
    return _job_list(model_admin, request, "scheduled", "Scheduled", lists.scheduled)


def completed(model_admin: Any, request: HttpRequest) -> HttpResponse:
    return _job_list(model_admin, request, "completed", "Completed", lists.completed)


def dead(model_admin: Any, request: HttpRequest) -> HttpResponse:
    return _job_list(model_admin, request, "dead", "Dead letter", lists.dead)


def cancelled(model_admin: Any, request: HttpRequest) -> HttpResponse:
    return _job_list(model_admin, request, "cancelled", "Cancelled", lists.cancelled)


def job(model_admin: Any, request: HttpRequest) -> HttpResponse:
    if not model_admin.has_view_permission(request):
        raise PermissionDenied
    queue, job_id = selected_queue(request.GET), request.GET.get("id", "").strip()
    detail = lists.job(queue, job_id) if job_id else None
    if detail is None:
        messages.warning(request, f"No job {job_id!r} in queue {queue!r}: never minted, deleted, or trimmed.")
        return HttpResponseRedirect(url("changelist"))
    return render(model_admin, request, "", f"Job {job_id}", "job", queue=queue, job=detail, now_ms=detail.now_ms,
                  f=detail.fields, described=present.describe(detail.fields), progress=present.progress(detail.fields),
                  links=flowlists.job_links(queue, job_id, detail.fields))


def find(model_admin: Any, request: HttpRequest) -> HttpResponse:
    if not model_admin.has_view_permission(request):
        raise PermissionDenied
    job_id = request.GET.get("id", "").strip()
    found = lists.find(job_id) if job_id else []
    if len(found) == 1:
        return HttpResponseRedirect(url("job", queue=found[0], id=job_id))
    if not found:
        messages.warning(request, f"No job {job_id!r} in any known queue." if job_id else "Give a job id to find.")
        back = request.META.get("HTTP_REFERER", "")
        safe = url_has_allowed_host_and_scheme(back, allowed_hosts={request.get_host()})
        return HttpResponseRedirect(back if safe else url("changelist"))
    return render(model_admin, request, "", f"Job {job_id}", "find", job_id=job_id,
                  found=[(q, url("job", queue=q, id=job_id)) for q in found])


def unavailable(request: HttpRequest, exc: EmqError) -> HttpResponse:
    """Say that the server cannot be reached instead of a 500 page."""
    return HttpResponse(f"The job server cannot be reached: {exc}", status=503, content_type="text/plain")
