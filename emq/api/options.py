"""The job options an HTTP caller may give (``"options": {...}``), their JSON types, and those refused.

They are ``.using()``'s options (``emq/jobs/options.py``) that JSON can carry and a remote caller
may choose; a value of the wrong JSON type is refused here with the type it must have, a value of
the right type but out of range by ``.using()`` itself, in its own words. Every option of
``Options`` is either here or in ``REFUSED`` with the reason (a test keeps it so).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

from .replies import ApiError


@dataclass(frozen=True)
class Option:
    """One option a caller may give: its JSON kind and what it does (the OpenAPI document shows both)."""

    kind: str  # "integer" | "number" | "string" | "boolean" | "pair" | "ids" | one of several strings, "a|b"
    help: str


OPTIONS: dict[str, Option] = {
    "group": Option("string", "The job's group (its lane): fairness, caps and rate limits are per group."),
    "priority": Option("integer", "-100..100: inside its group's lane, higher runs first (default 0)."),
    "job_id": Option("string", "The job's id; while a job with it is kept, the call mints nothing (created: false)."),
    "unique_for": Option("number", "Seconds in which at most one job per key (name + arguments, or unique_key) "
                                   "is minted."),
    "unique_key": Option("string", "The key of unique_for or debounce."),
    "unique_until": Option("finish|start", "When the unique key frees before its window ends."),
    "debounce": Option("number", "Seconds of quiet: every call pushes the one job back and replaces its arguments."),
    "max_attempts": Option("integer", "Attempts before the job is dead (at least 1)."),
    "backoff": Option("pair", "[base, cap] seconds of the jittered exponential delay between attempts."),
    "lease": Option("number", "Seconds of the job's lease (at least 1)."),
    "max_stalled": Option("integer", "Lease expiries the job survives before it is dead as stalled."),
    "timeout": Option("number", "Seconds one attempt may run."),
    "soft_timeout": Option("number", "Seconds after which SoftTimeLimit is raised inside the job (below timeout)."),
    "after": Option("ids", "Ids of jobs of the same queue to wait for (at most 1,000): the job is waiting until "
                           "they have settled."),
    "after_failure": Option("dead|run", "What a parent that did not complete does to the job."),
    "encrypt": Option("boolean", "true: the job's arguments, result and error texts are stored encrypted "
                                 "(EMQ_ENCRYPTION_KEYS); false: plain; default: the job's own, then EMQ_ENCRYPT."),
}
REFUSED: dict[str, str] = {
    "queue": 'give the queue as "queue" beside "name", not in "options"',
    "takes_context": "it belongs to the job's code (@emq.job), not to one call",
    "retry_on": "it belongs to the job's code (@emq.job): a worker reads it from the registered job",
    "on_commit": "an HTTP call has no database transaction to wait for: the job is minted before the answer",
}
_WORDS = {"integer": "a whole number", "number": "a number of seconds", "string": "a non-empty string",
          "boolean": "true or false",
          "pair": "[base, cap], two numbers of seconds", "ids": "a list of job ids (strings)"}


def parse(given: Any) -> dict[str, Any]:
    """The ``.using()`` keyword arguments of a request's "options" object; 400 naming what is wrong."""
    if given is None:
        return {}
    if not isinstance(given, dict):
        raise ApiError(400, f'"options" must be a JSON object, not {_shown(given)}', code="invalid_option")
    out = {}
    for name, value in given.items():
        if name in REFUSED:
            raise ApiError(400, f'option "{name}" is not taken over HTTP: {REFUSED[name]}', code="invalid_option")
        if name not in OPTIONS:
            raise ApiError(400, f'unknown option "{name}"; the API takes: {", ".join(OPTIONS)}', code="invalid_option")
        out[name] = _value(name, OPTIONS[name].kind, value)
    return out


def _value(name: str, kind: str, value: Any) -> Any:
    """The value as .using() takes it, or 400 saying which JSON type the option needs."""
    if value is None:
        return None  # null: the job's own setting, as if the option were not given
    number = isinstance(value, int | float) and not isinstance(value, bool)
    fits = {
        "integer": isinstance(value, int) and not isinstance(value, bool),
        "number": number and math.isfinite(value),
        "string": isinstance(value, str) and value != "",
        "boolean": isinstance(value, bool),
        "pair": isinstance(value, list) and len(value) == 2 and all(
            isinstance(v, int | float) and not isinstance(v, bool) for v in value),
        "ids": isinstance(value, list) and all(isinstance(v, str) and v for v in value),
    }.get(kind, value in kind.split("|"))
    if not fits:
        want = _WORDS.get(kind) or " or ".join(f'"{c}"' for c in kind.split("|"))
        raise ApiError(400, f'option "{name}" must be {want}, not {_shown(value)}', code="invalid_option")
    return tuple(value) if kind == "pair" else value


def _shown(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 60 else text[:57] + "..."


def schema(kind: str) -> dict[str, Any]:
    """An option's JSON Schema (the OpenAPI document)."""
    if kind == "pair":
        return {"type": ["array", "null"], "items": {"type": "number", "minimum": 0}, "minItems": 2, "maxItems": 2}
    if kind == "ids":
        return {"type": ["array", "null"], "items": {"type": "string", "minLength": 1}, "maxItems": 1000}
    if kind in ("integer", "number", "string", "boolean"):
        return {"type": [kind, "null"]} if kind != "string" else {"type": ["string", "null"], "minLength": 1}
    return {"enum": [*kind.split("|"), None]}
