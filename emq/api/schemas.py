"""The JSON Schemas of the API's bodies and answers, for its OpenAPI document.

The job's schema is read off ``emq.Job``'s fields and the options' off the API's option table, so
neither can drift from what the views send and take; the rest is short and written here.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ..core.records import Job
from . import options
from .queues import STATES

NULL_STRING = {"type": ["string", "null"]}
# A Job field's annotation (a string: records.py postpones them) -> its JSON Schema.
TYPES: dict[str, dict[str, Any]] = {
    "str": {"type": "string"}, "int": {"type": "integer"}, "list": {"type": "array"}, "dict": {"type": "object"},
    "str | None": NULL_STRING, "dict | None": {"type": ["object", "null"]},
    "float | None": {"type": ["number", "null"]},
    "datetime | None": {"type": ["string", "null"], "format": "date-time"},
    "tuple[str, str] | None": {"type": ["array", "null"], "items": {"type": "string"}},
    "tuple[journal.Step, ...]": {"type": "array", "description": "A durable job's journal, oldest first", "items": {
        "type": "object", "properties": {"name": {"type": "string"}, "kind": {"type": "string"}, "result": {},
                                         "finished": {"type": ["string", "null"], "format": "date-time"},
                                         "until": {"type": ["string", "null"], "format": "date-time"}}}},
}


def _object(properties: dict[str, Any], required: list[str] | None = None, **extra: Any) -> dict[str, Any]:
    return {"type": "object", "properties": properties,
            "required": list(properties) if required is None else required, **extra}


def job() -> dict[str, Any]:
    props = {f.name: dict(TYPES.get(str(f.type), {})) for f in dataclasses.fields(Job)}
    props["state"] = {"type": "string", "description": "waiting, scheduled, ready, active, completed, dead or "
                                                       "cancelled (or a state a later release adds)"}
    props["args"]["description"] = "Positional arguments; values of secret-looking parameters are masked."
    return _object(props, description="A job as stored now; every value a secret-looking name holds reads "
                                      "\u2022\u2022\u2022\u2022\u2022\u2022\u2022\u2022 (EMQ_MASK).")


def enqueue_request() -> dict[str, Any]:
    props = {
        "name": {"type": "string", "description": "A registered job's dotted name, e.g. myapp.jobs.send_welcome."},
        "args": {"type": "array", "default": [], "description": "Positional arguments."},
        "kwargs": {"type": "object", "default": {}, "description": "Keyword arguments."},
        "queue": {"type": "string", "description": "The queue (default: the job's own, else EMQ_DEFAULT_QUEUE)."},
        "delay": {"type": "number", "minimum": 0, "description": "Seconds from now before it is due."},
        "at": {"type": "string", "format": "date-time", "description": "When it is due, with its offset."},
        "options": {"$ref": "#/components/schemas/Options"},
    }
    return _object(props, ["name"], additionalProperties=False)


def job_options() -> dict[str, Any]:
    props = {name: {**options.schema(o.kind), "description": o.help} for name, o in options.OPTIONS.items()}
    return _object(props, [], additionalProperties=False,
                   description="Per-call options, as .using() takes them; unknown ones are refused.")


def schemas() -> dict[str, Any]:
    """Every component schema by name."""
    string, whole = {"type": "string"}, {"type": "integer", "minimum": 0}
    queue = _object({"name": string, "partitions": {"type": "integer", "minimum": 1}, "paused": {"type": "boolean"},
                     **dict.fromkeys(STATES, whole), "next_due": {**NULL_STRING, "format": "date-time"}})
    return {
        "Error": _object({"error": {**string, "description": "A stable code to branch on."},
                          "detail": {**string, "description": "What went wrong and what to do, for a person."}}),
        "EnqueueRequest": enqueue_request(),
        "Options": job_options(),
        "Enqueued": _object({"id": string, "queue": string, "state": {**NULL_STRING, "description":
                                                                      "The job's state now (null: not stored)."},
                             "created": {"type": "boolean", "description": "False: a job with this job_id or "
                                                                           "unique key existed; id names it."}}),
        "Changed": _object({"id": string, "queue": string, "state": string}),
        "Job": job(),
        "Queue": queue,
        "QueueList": _object({"queues": {"type": "array", "items": {"$ref": "#/components/schemas/Queue"}},
                              "total": whole, "next_offset": {"type": ["integer", "null"]}}),
        "Event": _object({"kind": string, "id": string, "queue": string, "detail": {}, "extra": {},
                          "at": {**NULL_STRING, "format": "date-time"}},
                         description="The data of one Server-Sent Event: one state change of one job."),
    }
