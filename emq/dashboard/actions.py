"""The dashboard's actions: POST only, CSRF-checked, change permission, each named in a message.

Destructive ones (release, cancel, delete, retry all, delete all) first answer a confirmation
page; the form posted from it carries ``confirmed=1``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import django
from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseNotAllowed, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.translation import ngettext

from ..core.engine import Queue
from ..core.logical import partition
from . import workeractions
from .queries import prefix
from .rates import remove_rate, set_rate
from .scan import Filters
from .steps import send_signal
from .views import selected_queue, url

BULK_BUDGET = 10_000  # dead jobs one "retry all" / "delete all" reads at most per request
CONFIRM = {"release", "cancel", "delete", "retry_all", "delete_all"}
SKIP = ("csrfmiddlewaretoken", "ids", "confirmed")
Op = Callable[[Queue, Sequence[str]], list[str]]
Handler = Callable[[HttpRequest, Queue], None]


def dispatch(model_admin: Any, request: HttpRequest, action: str) -> HttpResponse:
    """Run one action named in the URL, or ask for confirmation first."""
    if request.method != "POST":
        return HttpResponseNotAllowed(["POST"])
    if not model_admin.has_change_permission(request):
        raise PermissionDenied
    handler = HANDLERS.get(action)
    if handler is None:
        raise Http404(f"no dashboard action {action!r}; known: {', '.join(sorted(HANDLERS))}")
    queue = partition(selected_queue(request.POST), prefix=prefix())
    if action in CONFIRM and request.POST.get("confirmed") != "1":
        return confirm(model_admin, request, action, queue)
    handler(request, queue)
    return HttpResponseRedirect(back(request))


def back(request: HttpRequest) -> str:
    nxt = request.POST.get("next", "")
    if url_has_allowed_host_and_scheme(nxt, allowed_hosts={request.get_host()}, require_https=request.is_secure()):
        return nxt
    return url("changelist")


def confirm(model_admin: Any, request: HttpRequest, action: str, queue: Queue) -> HttpResponse:
    """The page that asks "are you sure?", repeating every posted field."""
    context = {
        **model_admin.admin_site.each_context(request),
        "opts": model_admin.model._meta,
        "crumbs_ol": django.VERSION >= (6, 0),
        "tab": "confirm",
        "title": "Are you sure?",
        "action": action,
        "action_label": LABELS[action],
        "queue": queue.name,
        "ids": request.POST.getlist("ids"),
        "fields": [(k, v) for k in request.POST if k not in SKIP for v in request.POST.getlist(k)],
        "filters": Filters.from_query(request.POST),
        "cancel": back(request),
    }
    return TemplateResponse(request, "admin/emq/dashboard/confirm.html", context)


def _names(ids: Sequence[str]) -> str:
    return ", ".join(ids[:10]) + (" …" if len(ids) > 10 else "")


def _report(request: HttpRequest, ids: Sequence[str], statuses: Sequence[str], done: tuple[str, str], queue: Queue):
    ok = [i for i, s in zip(ids, statuses, strict=True) if s == "ok"]
    if ok:
        text = ngettext(done[0], done[1], len(ok)) % {"n": len(ok), "q": queue.name}
        messages.success(request, f"{text}: {_names(ok)}.")
    skipped = [f"{i} ({s})" for i, s in zip(ids, statuses, strict=True) if s != "ok"]
    if skipped:
        messages.warning(
            request,
            ngettext("Left %(n)d job as it was: %(list)s.", "Left %(n)d jobs as they were: %(list)s.", len(skipped))
            % {"n": len(skipped), "list": _names(skipped)},
        )


def _ids(request: HttpRequest) -> list[str]:
    ids = [i for i in request.POST.getlist("ids") if i]
    if not ids:
        messages.warning(request, "No job selected: tick at least one.")
    return ids


def release(request: HttpRequest, queue: Queue) -> None:
    job_id, token = request.POST.get("ids", ""), request.POST.get("token", "")
    if not token.isdigit():
        messages.error(request, f"Release of job {job_id!r} needs its token (attempt number).")
        return
    status = queue.release_locks([(job_id, int(token))])[0]
    if status == "ok":
        messages.success(request, f"Released job {job_id} (attempt {token}) in queue {queue.name}: it is ready again. "
                                  "The attempt already running keeps running; its outcome will be discarded.")
    else:
        messages.warning(request, f"Did not release job {job_id}: its lease is {status} (it finished or moved on).")


def sweep(request: HttpRequest, queue: Queue) -> None:
    n = len(queue.sweep())
    messages.success(
        request,
        ngettext("Swept queue %(q)s: reclaimed %(n)d expired lease.",
                 "Swept queue %(q)s: reclaimed %(n)d expired leases.", n)
        % {"q": queue.name, "n": n},
    )


def _pause(pause: bool) -> Handler:
    def handler(request: HttpRequest, queue: Queue) -> None:
        group = request.POST.get("group", "").strip() or None
        changed = queue.pause(group) if pause else queue.resume(group)
        what = f"lane {group} of queue {queue.name}" if group else f"queue {queue.name}"
        if not changed:
            messages.warning(request, f"Left {what} as it was: it was {'already' if pause else 'not'} paused.")
        elif pause:
            messages.success(request, f"Paused {what}: its jobs stay ready and no worker starts one until resumed.")
        else:
            messages.success(request, f"Resumed {what}: workers take its ready jobs again.")

    return handler


def _by_ids(op: Op, done: tuple[str, str]) -> Handler:
    def handler(request: HttpRequest, queue: Queue) -> None:
        ids = _ids(request)
        if ids:
            _report(request, ids, op(queue, ids), done, queue)

    return handler


def _bulk(op: Op, verb: str) -> Handler:
    def handler(request: HttpRequest, queue: Queue) -> None:
        filters = Filters.from_query(request.POST)
        ids, scanned = queue.ids("dead", 0, BULK_BUDGET, filters)
        total = queue.size("dead")
        statuses = op(queue, ids) if ids else []
        ok = sum(1 for s in statuses if s == "ok")
        what = f" matching {filters.describe()}" if filters.active else ""
        msg = ngettext("%(verb)s %(n)d dead job%(what)s in queue %(q)s.",
                       "%(verb)s %(n)d dead jobs%(what)s in queue %(q)s.", ok)
        msg %= {"verb": verb, "n": ok, "what": what, "q": queue.name}
        if scanned < total:
            msg += (f" Read the first {scanned:,} of {total:,} dead jobs (at most {BULK_BUDGET:,} a request):"
                    " run again for more.")
        messages.success(request, msg)

    return handler


def _run_now(q: Queue, ids: Sequence[str]) -> list[str]:
    return q.admin.run_now(ids)


def _retry(q: Queue, ids: Sequence[str]) -> list[str]:
    return q.admin.retry(ids)


def _delete(q: Queue, ids: Sequence[str]) -> list[str]:
    return q.admin.delete(ids)


def _cancel(q: Queue, ids: Sequence[str]) -> list[str]:
    return q.cancel(ids)


HANDLERS: dict[str, Handler] = {
    "release": release,
    "sweep": sweep,
    "run_now": _by_ids(_run_now, ("Made %(n)d scheduled job of queue %(q)s ready now",
                                     "Made %(n)d scheduled jobs of queue %(q)s ready now")),
    "retry": _by_ids(_retry, ("Retried %(n)d dead job of queue %(q)s with a fresh budget of attempts",
                                 "Retried %(n)d dead jobs of queue %(q)s with a fresh budget of attempts")),
    "delete": _by_ids(_delete, ("Deleted %(n)d job of queue %(q)s", "Deleted %(n)d jobs of queue %(q)s")),
    "cancel": _by_ids(_cancel, ("Cancelled %(n)d job of queue %(q)s", "Cancelled %(n)d jobs of queue %(q)s")),
    "pause": _pause(True),
    "resume": _pause(False),
    "set_rate": set_rate,
    "remove_rate": remove_rate,
    "signal": send_signal,
    "retry_all": _bulk(_retry, "Retried"),
    "delete_all": _bulk(_delete, "Deleted"),
    **workeractions.HANDLERS,
}
LABELS = {
    "release": (
        "Give back this lease: the job becomes ready and runs again, while the attempt already running keeps "
        "running (its outcome is discarded as stale). To stop the job instead, cancel it"
    ),
    "cancel": (
        "Cancel these jobs: a scheduled or ready one never runs, a running one is stopped and its outcome "
        "discarded; each ends as cancelled"
    ),
    "delete": "Delete these jobs for good",
    "retry_all": "Retry every dead job that matches",
    "delete_all": "Delete every dead job that matches, for good",
    "run_now": "Run now", "retry": "Retry", "sweep": "Sweep now", "pause": "Pause", "resume": "Resume",
    "set_rate": "Set rate limit", "remove_rate": "Remove rate limit", **workeractions.LABELS,
}
