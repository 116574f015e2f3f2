"""The API's JSON answers: a value, or an error as ``{"error": code, "detail": sentence}``.

Every refusal is an ``ApiError`` raised where the reason is known and answered in one place
(``endpoint.py``), so no view builds an error body of its own.
"""

from __future__ import annotations

from typing import Any

from django.http import JsonResponse

# Status -> the error code a client branches on; "detail" is for the human reading it.
CODES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    409: "conflict",
    413: "too_large",
    503: "unavailable",
}


class ApiError(Exception):
    """A request refused with an HTTP status, a stable code and a sentence saying what to do."""

    def __init__(self, status: int, detail: str, code: str | None = None, headers: dict[str, str] | None = None):
        super().__init__(detail)
        self.status = status
        self.code = code or CODES[status]
        self.detail = detail
        self.headers = headers or {}


def ok(value: Any, status: int = 200) -> JsonResponse:
    """A JSON answer (objects only, so a list can never be read as a script by an old browser)."""
    return JsonResponse(value, status=status, json_dumps_params={"ensure_ascii": False})


def error(exc: ApiError) -> JsonResponse:
    """The JSON body of a refusal, with its headers (WWW-Authenticate, Allow)."""
    response = ok({"error": exc.code, "detail": exc.detail}, exc.status)
    for name, value in exc.headers.items():
        response[name] = value
    return response
