"""A request's JSON body, read at most ``EMQ_API_MAX_BODY`` bytes of: a larger one is refused unread.

The declared ``Content-Length`` is judged before authentication and before a byte is read, so
a 2 GB upload costs the server nothing; the read itself stops one byte past the limit.
"""

from __future__ import annotations

import json
from typing import Any

from django.http import HttpRequest

from ..core import config
from .replies import ApiError


def limit() -> int:
    return int(config.get("EMQ_API_MAX_BODY"))


def check_length(request: HttpRequest) -> None:
    """Refuse a body declared larger than the limit (413) or a Content-Length that is no number (400)."""
    raw = request.META.get("CONTENT_LENGTH") or "0"
    try:
        length = int(raw)
    except ValueError:
        raise ApiError(400, f"Content-Length {raw!r} is not a number of bytes") from None
    if length > limit():
        raise _too_large(length)


def read_json(request: HttpRequest) -> dict[str, Any]:
    """The body as a JSON object; 400 saying what is wrong with it, 413 past the limit."""
    raw = request.read(limit() + 1)
    if len(raw) > limit():
        raise _too_large(None)
    if not raw.strip():
        raise ApiError(400, "the body is empty: send a JSON object (Content-Type: application/json)",
                       code="invalid_json")
    try:
        value = json.loads(raw, parse_constant=_no_constant)
    except (ValueError, RecursionError) as exc:
        raise ApiError(400, f"the body is not valid JSON: {exc}", code="invalid_json") from None
    if not isinstance(value, dict):
        raise ApiError(400, f"the body must be a JSON object {{...}}, not a {type(value).__name__}",
                       code="invalid_json")
    return value


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON (a job's values must survive JSON)")


def _too_large(length: int | None) -> ApiError:
    what = "the body" if length is None else f"the body ({length:,} bytes)"
    return ApiError(413, f"{what} is over EMQ_API_MAX_BODY ({limit():,} bytes): send less "
                         "(large data belongs in storage the job reads, with its key as the argument)")
