"""Acting on every job of a list that matches its filters, from the dashboard: one step a request.

The page's script POSTs a step at a time (``engine.bulk.step``: a slice of at most 5,000 entries read and
up to 1,000 jobs changed in one round trip) with the cursor the last step answered, draws the progress,
and after the last one reloads the page, where the message says how many jobs changed. So an action on
100,000 jobs is about a hundred short requests, none near a timeout; one cut short (a closed tab) is
resumed by pressing the button again, every action being idempotent per job. ``op=count`` changes nothing:
the count behind "Select all N matching".

Without a script the form posts once: a confirmation page, then steps for up to NO_SCRIPT_SECONDS, and a
message that says how far it got.
"""

from __future__ import annotations

import logging
import time
from typing import Any

import django
from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseNotAllowed, HttpResponseRedirect, JsonResponse
from django.template.response import TemplateResponse
from django.utils.http import url_has_allowed_host_and_scheme

from ..core.engine import bulk
from ..core.engine.filters import Filters
from ..core.logical import partition
from .listing import LABELS
from .queries import prefix
from .scan import shows
from .views import selected_queue, url

log = logging.getLogger("emq.dashboard")
NO_SCRIPT_SECONDS = 10.0
DONE = {"retry": "Retried", "run_now": "Made ready now", "cancel": "Cancelled", "delete": "Deleted", "move": "Moved"}


def step(model_admin: Any, request: HttpRequest) -> HttpResponse:
    """One step of an action on every job that matches (JSON), or, without a script, as many as fit."""
    if request.method != "POST":
        return HttpResponseNotAllowed(["POST"])
    op = request.POST.get("op", "")
    allowed = model_admin.has_view_permission(request) if op == "count" else model_admin.has_change_permission(request)
    if not allowed:
        raise PermissionDenied
    try:
        filters = Filters.from_query(request.POST)
        of, target = request.POST.get("list", ""), request.POST.get("target", "").strip()
        bulk.check(of, op, target)
    except ValueError as exc:
        return JsonResponse({"error": "bad request", "detail": str(exc)}, status=400)
    queue = partition(selected_queue(request.POST), prefix=prefix())
    accept = (lambda f: shows(f, filters.text)) if filters.text else None
    if "json" not in request.headers.get("Accept", ""):
        return _without_script(model_admin, request, queue, of, filters, op, target, accept)
    try:
        s = bulk.step(queue, of, filters, op, request.POST.get("cursor", ""), target=target, accept=accept)
    except ValueError as exc:
        return JsonResponse({"error": "bad request", "detail": str(exc)}, status=400)
    totals = {k: _int(request, f"t_{k}") + getattr(s, k) for k in ("read", "matched", "changed")}
    left = {k: v + _int(request, f"left_{k}") for k, v in s.left.items()}
    reply = {"cursor": s.cursor, "done": s.cursor is None, "in_range": s.in_range, "totals": totals, "left": left,
             "message": _message(op, queue.name, of, target, totals, left, s.cursor is None)}
    if reply["done"] and op != "count":
        _said(request, reply["message"], bool(left), filters)
    return JsonResponse(reply)


def _said(request: HttpRequest, text: str, partly: bool, filters: Filters) -> None:
    """Tell the user what an action did, and log it with who asked (an action on many jobs leaves a trace)."""
    (messages.warning if partly else messages.success)(request, text)
    log.info("%s user=%s filters=%s", text, request.user.get_username(), filters.describe() or "none")


def _message(op: str, queue: str, of: str, target: str, totals: dict[str, int], left: dict[str, int],
             done: bool) -> str:
    if op == "count":
        return f"{totals['matched']:,} {of} jobs match (read {totals['read']:,})."
    to = f" to {target}" if op == "move" else ""
    text = (f"{DONE[op]} {totals['changed']:,} of {totals['matched']:,} matching {of} jobs of queue {queue}{to}"
            f"{'' if done else ' so far'}.")
    if left:
        text += " Left as they were: " + ", ".join(f"{n:,} {why}" for why, n in sorted(left.items())) + "."
    return text


def _int(request: HttpRequest, name: str) -> int:
    try:
        return max(int(request.POST.get(name, 0)), 0)
    except ValueError:
        return 0


def _without_script(model_admin: Any, request: HttpRequest, queue: Any, of: str, filters: Filters, op: str,
                    target: str, accept: Any) -> HttpResponse:
    """The form posted without the page's script: confirm, then steps for up to NO_SCRIPT_SECONDS."""
    if op != "count" and request.POST.get("confirmed") != "1":
        return _confirm(model_admin, request, queue.name, op, filters)
    cursor: str | None = ""
    totals, left, ends = {"read": 0, "matched": 0, "changed": 0}, {}, time.monotonic() + NO_SCRIPT_SECONDS
    while cursor is not None and time.monotonic() < ends:
        s = bulk.step(queue, of, filters, op, cursor, target=target, accept=accept)
        cursor = s.cursor
        for k in totals:
            totals[k] += getattr(s, k)
        for k, v in s.left.items():
            left[k] = left.get(k, 0) + v
    text = _message(op, queue.name, of, target, totals, left, cursor is None)
    if cursor is not None:
        text += " More may match: press the button again to go on."
    _said(request, text, bool(left), filters)
    return HttpResponseRedirect(_back(request))


def _confirm(model_admin: Any, request: HttpRequest, queue: str, op: str, filters: Filters) -> HttpResponse:
    context = {
        **model_admin.admin_site.each_context(request), "opts": model_admin.model._meta,
        "crumbs_ol": django.VERSION >= (6, 0), "tab": "confirm", "title": "Are you sure?", "queue": queue,
        "action_label": f"{LABELS[op]} every {request.POST.get('list')} job that matches", "ids": [],
        "fields": [(k, v) for k in request.POST if k not in ("csrfmiddlewaretoken", "confirmed")
                   for v in request.POST.getlist(k)],
        "filters": filters, "cancel": _back(request),
    }
    return TemplateResponse(request, "admin/emq/dashboard/confirm.html", context)


def _back(request: HttpRequest) -> str:
    nxt = request.POST.get("next", "")
    if url_has_allowed_host_and_scheme(nxt, allowed_hosts={request.get_host()}, require_https=request.is_secure()):
        return nxt
    return url("changelist")
