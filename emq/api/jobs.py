"""``GET /jobs/<id>``, ``POST /jobs/<id>/cancel`` and ``/retry``: one job by its id, through the engine.

An id stands alone (DESIGN rule 13): a call without ``?queue=`` finds the queue that holds the id
(``core.locate``: one round trip for a generated id). An id found in two queues (a caller's
``job_id`` reused) is a 409 until the caller names the queue.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, JsonResponse

from ..core import locate, topology
from ..core.engine import Queue
from ..errors import AmbiguousJobId, JobNotFound
from .params import queue_query
from .present import job_json
from .replies import ApiError, ok

CANCELLABLE = ("waiting", "scheduled", "ready", "active")


def holder(job_id: str, queue: str | None) -> Queue:
    """The physical queue that holds the job: in the queue given, else wherever its id is."""
    return _answering(locate.holder, job_id, queue)[0]


def read(request: HttpRequest, job_id: str) -> JsonResponse:
    """The job, masked as the dashboard shows it."""
    return ok(job_json(_answering(locate.read, job_id, queue_query(request))))


def _answering(look: Any, job_id: str, queue: str | None) -> Any:
    """look(job_id, queue), an id in two queues answered as a 409 that asks for ?queue=."""
    try:
        return look(job_id, queue)
    except AmbiguousJobId as exc:
        raise ApiError(409, f"job id {job_id!r} is in {len(exc.queues)} queues ({', '.join(exc.queues)}): "
                            "name the one you mean with ?queue=", code="ambiguous_id") from exc


def cancel(request: HttpRequest, job_id: str) -> JsonResponse:
    """Cancel a waiting, scheduled, ready or running job; 409 when it had already ended."""
    q = holder(job_id, queue_query(request))
    return _answer(q, job_id, q.cancel([job_id])[0], "cancelled",
                   f"only {', '.join(CANCELLABLE[:-1])} or {CANCELLABLE[-1]} jobs can be cancelled")


def retry(request: HttpRequest, job_id: str) -> JsonResponse:
    """Give a dead or cancelled job a fresh budget of attempts and make it ready now, resuming its flow
    (``emq.retry``, the dashboard's retry)."""
    q = holder(job_id, queue_query(request))
    return _answer(q, job_id, q.admin.retry([job_id])[0], "ready", "only dead or cancelled jobs can be retried")


def _answer(q: Queue, job_id: str, status: str, state: str, rule: str) -> JsonResponse:
    """The engine's status for one id as the API answers it: ok, 404 missing, 409 in another state."""
    if status == "missing":
        raise JobNotFound(f"no job {job_id!r} in queue {q.name!r}")
    if status != "ok":
        raise ApiError(409, f"job {job_id!r} is {status}: {rule}", code="wrong_state")
    return ok({"id": job_id, "queue": topology.logical(q.name), "state": state})
