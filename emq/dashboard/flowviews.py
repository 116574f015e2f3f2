"""The dashboard's pages about flows (Waiting, Flows, one flow) and the live feed of a queue's events.

The feed is what the pages' script long-polls: one bounded blocking read of the queue's event
stream (EMQ_EVENTS), answered as JSON; the script updates a job's progress bar in place and
reloads a page when something it shows has changed.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, JsonResponse

from ..core import config, events, registry
from . import flowlists
from .views import _int, _job_list, render, selected_queue, url

# A feed request blocks this long at most for the next event: under the shared client's 5 s socket
# timeout, or a quiet queue's feed ends in a read timeout (a 503) instead of an empty answer.
FEED_BLOCK_MS = 4000
FEED_EVENTS = 200  # events answered by one feed request at most


def waiting(model_admin: Any, request: HttpRequest) -> HttpResponse:
    return _job_list(model_admin, request, "waiting", "Waiting for parents", flowlists.waiting)


def flows(model_admin: Any, request: HttpRequest) -> HttpResponse:
    if not model_admin.has_view_permission(request):
        raise PermissionDenied
    queue = selected_queue(request.GET)
    data = flowlists.flows(queue, _int(request, "pos"))
    return render(model_admin, request, "flows", f"Batches and chains — {queue}", "flows", data=data,
                  now_ms=data.now_ms, next_url=url("flows", queue=queue, pos=data.next) if data.next else None,
                  first_url=url("flows", queue=queue) if data.start else None)


def flow(model_admin: Any, request: HttpRequest) -> HttpResponse:
    if not model_admin.has_view_permission(request):
        raise PermissionDenied
    queue, flow_id = selected_queue(request.GET), request.GET.get("id", "").strip()
    detail = flowlists.flow(queue, flow_id, _int(request, "pos")) if flow_id else None
    if detail is None:
        return render(model_admin, request, "flows", f"No flow {flow_id!r}", "flow", detail=None, now_ms=0)
    kind = detail.row.fields["kind"]
    return render(model_admin, request, "flows", f"{kind.capitalize()} {flow_id}", "flow", detail=detail,
                  now_ms=detail.now_ms, live=True,
                  next_url=url("flow", queue=queue, id=flow_id, pos=detail.next) if detail.next else None)


def feed(model_admin: Any, request: HttpRequest) -> HttpResponse:
    """The next events of a queue after ``since`` (a stream id), waiting up to FEED_BLOCK_MS for one.

    A queue no job or worker ever used answers 404 at once (nothing would come in its stream), and a
    ``since`` that is not a stream id 400: neither holds a request open nor reaches the server.
    """
    if not model_admin.has_view_permission(request):
        raise PermissionDenied
    queue = selected_queue(request.GET)
    since = request.GET.get("since", "").strip() or None
    if not registry.is_known(queue):
        return JsonResponse({"error": f"no queue {queue!r} in this project"}, status=404)
    try:
        since = since if since is None else events.stream_id(since)
    except ValueError as exc:
        return JsonResponse({"error": str(exc)}, status=400)
    cursors = events.cursors_of([queue], since, config.get("EMQ_PREFIX"))
    found = [] if since is None else events.read([queue], cursors, FEED_BLOCK_MS, config.get("EMQ_PREFIX"))
    job = request.GET.get("job", "").strip()
    shown = [e for e in found if not job or e.id == job][:FEED_EVENTS]
    return JsonResponse({"since": cursors[queue], "events": [
        {"kind": e.kind, "id": e.id, "detail": e.detail, "extra": e.extra} for e in shown]})
