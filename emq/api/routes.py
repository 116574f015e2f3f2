"""The API's route table: the one source of its URLs (``urls.py``) and its OpenAPI document (``openapi.py``).

A route names its method, its path under the mount, the scope a caller needs, its view, and what
the document says of it; ``endpoint.py`` makes a route a Django view.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from . import enqueue, jobs, queues, stream

PATH_PARAM = re.compile(r"<(?:\w+:)?(\w+)>")


@dataclass(frozen=True)
class Param:
    """A query or header parameter, as the OpenAPI document lists it."""

    name: str
    where: str  # "query" | "header"
    schema: dict[str, Any]
    help: str


@dataclass(frozen=True)
class Route:
    method: str
    path: str  # under the mount, in Django's syntax: "jobs/<str:job_id>/cancel"
    view: Callable[..., Any]
    scope: str | None  # None: anyone may call it
    name: str  # the URL name and the operationId
    summary: str
    params: tuple[Param, ...] = ()
    body: str | None = None  # the component schema of its JSON body
    answers: tuple[tuple[int, str], ...] = ()  # (status, component schema) of what it answers when it succeeds
    errors: tuple[int, ...] = ()  # the statuses it refuses with, besides those every route may
    stream: bool = False  # answers text/event-stream

    def path_params(self) -> list[str]:
        return PATH_PARAM.findall(self.path)

    def openapi_path(self) -> str:
        return "/" + PATH_PARAM.sub(r"{\1}", self.path)


QUEUE = Param("queue", "query", {"type": "string"},
              "The job's queue. Optional: without it every known queue is asked (one round trip, one EXISTS per "
              "queue partition), until ids are found in O(1) without it (issue #32).")

ROUTES: tuple[Route, ...] = (
    Route("POST", "jobs/", enqueue.enqueue, "enqueue", "emq_api_enqueue",
          "Enqueue a job of a registered name, its arguments checked against the function's signature.",
          body="EnqueueRequest", answers=((201, "Enqueued"), (200, "Enqueued")), errors=(400, 413)),
    Route("GET", "jobs/<str:job_id>", jobs.read, "read", "emq_api_job",
          "Read a job: its state, attempts, times, result and errors, secrets masked as on the dashboard.",
          params=(QUEUE,), answers=((200, "Job"),), errors=(400, 404, 409)),
    Route("POST", "jobs/<str:job_id>/cancel", jobs.cancel, "control", "emq_api_cancel",
          "Cancel a waiting, scheduled, ready or running job (409 once it has ended).",
          params=(QUEUE,), answers=((200, "Changed"),), errors=(400, 404, 409)),
    Route("POST", "jobs/<str:job_id>/retry", jobs.retry, "control", "emq_api_retry",
          "Retry a dead job with a fresh budget of attempts: it is ready at once (409 in any other state).",
          params=(QUEUE,), answers=((200, "Changed"),), errors=(400, 404, 409)),
    Route("GET", "queues/", queues.counts, "read", "emq_api_queues",
          "Every known queue's jobs per state, a page of queues sorted by name.",
          params=(Param("offset", "query", {"type": "integer", "minimum": 0}, "Skip this many queues."),
                  Param("limit", "query", {"type": "integer", "minimum": 1, "maximum": queues.MAX_PAGE},
                        f"Queues in the page (default {queues.PAGE}).")),
          answers=((200, "QueueList"),), errors=(400,)),
    Route("GET", "events/<str:queue>", stream.stream, "read", "emq_api_events",
          "A queue's state changes as Server-Sent Events, resumable with Last-Event-ID; each response ends after "
          "EMQ_API_EVENTS_SECONDS and the client reconnects.",
          params=(Param("Last-Event-ID", "header", {"type": "string"},
                        "Resume after this event (the id of the last one received); 0: from the oldest kept."),
                  Param("last_event_id", "query", {"type": "string"}, "The same, for a client that cannot set it.")),
          answers=((200, ""),), errors=(400, 409), stream=True),
)
PATH_HELP = {"job_id": "The job's id, as enqueue answered it.", "queue": "A queue's name (a partition's: name#i)."}
