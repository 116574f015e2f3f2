"""The dashboard's pages: each checks the view permission, reads through one query, renders."""

from __future__ import annotations

from typing import Any

import django
from django.contrib import messages
from django.core.exceptions import BadRequest, PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.utils.http import url_has_allowed_host_and_scheme

from ..core import config, topology
from ..core.logical import partition
from ..core.unknown import unknown_names
from ..errors import ConfigurationError, EmqError
from . import flowlists, listing, lists, present, queries, quotas, rates, statistics, steps
from .links import page_urls, url
from .scan import SCAN_BUDGET

TABS = (
    ("changelist", "Overview"), ("lanes", "Lanes"), ("leases", "Leases"), ("stalled", "Stalled"),
    ("waiting", "Waiting"), ("scheduled", "Scheduled"), ("completed", "Completed"), ("dead", "Dead letter"),
    ("cancelled", "Cancelled"), ("flows", "Flows"), ("statistics", "Statistics"),
)
STATE_TABS = ("waiting", "scheduled", "leases", "completed", "dead", "cancelled")  # lists that share filters


def recurrence_jobs_url(queue: str, recurrence: str, state: str = "completed") -> str:
    """Where a recurrence links to the jobs it minted: a list filtered by origin ``repeat:<name>``."""
    return url(state, queue=queue, origin=f"repeat:{recurrence}")


def selected_queue(params: Any) -> str:
    """The physical queue a page or action is about (a partitioned queue's name: its first partition).

    A name no queue can have is a bad request (400), not a server error.
    """
    name = params.get("queue", "").strip() or config.get("EMQ_DEFAULT_QUEUE")
    try:
        return topology.names(name)[0]
    except ConfigurationError as exc:
        raise BadRequest(str(exc)) from None


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
        "urls": page_urls(),
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
        unknown=unknown_names([r.name for r in data.queues]),
        unserved=[r.name for r in data.queues if r.unserved],
        chart=statistics.chart_context(selected_queue(request.GET)),
    )


def lanes(model_admin: Any, request: HttpRequest) -> HttpResponse:
    if not model_admin.has_view_permission(request):
        raise PermissionDenied
    queue = selected_queue(request.GET)
    data = queries.lanes(queue, _int(request, "pos"), _int(request, "lc"))
    q = partition(queue, prefix=queries.prefix())
    rate_rows, holds = rates.rows(q)
    shown = [g.group for g in (*data.ring, *data.lanes)]
    quota_rows, quota_groups = quotas.rows(q, shown)
    return render(
        model_admin, request, "lanes", f"Lanes of {queue}", "lanes", data=data, now_ms=data.now_ms,
        rate_rows=rate_rows, holds=holds, quota_rows=quota_rows, quota_groups=quota_groups,
        ring_next=url("lanes", queue=queue, pos=data.ring_next) if data.ring_next else None,
        ring_prev=url("lanes", queue=queue, pos=max(data.ring_start - 50, 0)) if data.ring_start else None,
        lanes_next=url("lanes", queue=queue, lc=data.lanes_cursor) if data.lanes_cursor else None,
    )


def ready(model_admin: Any, request: HttpRequest) -> HttpResponse:
    """Ready jobs: one lane's in claim order (reached from the Lanes page), or every lane's, filtered."""
    group = request.GET.get("group", "").strip()
    title = f"Ready in lane {group}" if group else "Ready"
    def read(queue: str, start: int, filters: Any, cursor: str) -> lists.JobList:
        return lists.ready(queue, filters.group, start, filters, cursor)

    return _job_list(model_admin, request, "ready", title, read, tab="lanes", group=group)


def _job_list(model_admin: Any, request: HttpRequest, page: str, title: str, read: Any, *, tab: str = "",
              **extra: Any) -> HttpResponse:
    """A list page: its filters, a page of its jobs (by offset, or filtered from the cursor "after"), the
    pager, the same filters on the other lists, and the bar that acts on every job that matches."""
    if not model_admin.has_view_permission(request):
        raise PermissionDenied
    queue, filters = selected_queue(request.GET), listing.filters_of(request)
    try:
        data = read(queue, _int(request, "pos"), filters, request.GET.get("after", ""))
    except ValueError as exc:  # a cursor edited by hand: the first page, said
        messages.warning(request, str(exc))
        data = read(queue, 0, filters, "")
    keep = {"queue": queue, **filters.query()}
    of = listing.LIST_OF[page]
    return render(
        model_admin, request, tab or page, f"{title} — {queue}", page, data=data, now_ms=data.now_ms,
        filters=filters, rows=data.slice.rows, slice=data.slice, budget=SCAN_BUDGET,
        **listing.pager(page, data.slice, keep, url), time_label=listing.TIME_OF[of],
        since=listing.local_time(filters.since), until=listing.local_time(filters.until),
        state_links=[(n, label, url(n, **keep)) for n, label in TABS if n in STATE_TABS],
        bulk=listing.bulk(of, data.slice, filters, listing.targets(queue)), **extra,
    )


def leases(model_admin: Any, request: HttpRequest) -> HttpResponse:
    return _job_list(model_admin, request, "leases", "Leases", lists.leases)


def stalled(model_admin: Any, request: HttpRequest) -> HttpResponse:
    return _job_list(model_admin, request, "stalled", "Stalled", lists.stalled)


def scheduled(model_admin: Any, request: HttpRequest) -> HttpResponse:
    return _job_list(model_admin, request, "scheduled", "Scheduled", lists.scheduled)


def completed(model_admin: Any, request: HttpRequest) -> HttpResponse:
    return _job_list(model_admin, request, "completed", "Completed", lists.completed)


def dead(model_admin: Any, request: HttpRequest) -> HttpResponse:
    classes, counted, total = lists.error_classes(selected_queue(request.GET))
    return _job_list(model_admin, request, "dead", "Dead letter", lists.dead, classes=classes,
                     classes_counted=counted, classes_total=total)


def cancelled(model_admin: Any, request: HttpRequest) -> HttpResponse:
    return _job_list(model_admin, request, "cancelled", "Cancelled", lists.cancelled)


def job(model_admin: Any, request: HttpRequest) -> HttpResponse:
    if not model_admin.has_view_permission(request):
        raise PermissionDenied
    queue, job_id = selected_queue(request.GET), request.GET.get("id", "").strip()
    if job_id and not request.GET.get("queue", "").strip():  # an id alone: its queue is found (find's page)
        found = lists.find(job_id)
        if len(found) != 1:
            return HttpResponseRedirect(url("find", id=job_id))
        queue = found[0]
    detail = lists.job(queue, job_id) if job_id else None
    if detail is None:
        messages.warning(request, f"No job {job_id!r} in queue {queue!r}: never minted, deleted, or trimmed.")
        return HttpResponseRedirect(url("changelist"))
    return render(model_admin, request, "", f"Job {job_id}", "job", queue=queue, job=detail, now_ms=detail.now_ms,
                  f=detail.fields, described=present.describe(detail.fields), progress=present.progress(detail.fields),
                  links=flowlists.job_links(queue, job_id, detail.fields), steps=steps.rows(detail.fields))


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
