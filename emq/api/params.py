"""Names and numbers a caller passes in a path or a query string, checked before they reach a key."""

from __future__ import annotations

from django.http import HttpRequest

from .replies import ApiError

MAX_NAME = 200  # characters of a queue name: keys stay short, and no real queue is longer


def queue_name(value: object, where: str = '"queue"') -> str:
    """A queue name fit for a key: a non-empty string without braces (they are the hash tag)."""
    if not isinstance(value, str) or not value.strip() or len(value) > MAX_NAME:
        raise ApiError(400, f"{where} must be a queue name of 1 to {MAX_NAME} characters, not {value!r}",
                       code="invalid_queue")
    if "{" in value or "}" in value:
        raise ApiError(400, f"{where}: queue name {value!r} must not contain braces (they are the hash tag)",
                       code="invalid_queue")
    return value


def queue_query(request: HttpRequest) -> str | None:
    """``?queue=`` when given (checked), else None."""
    value = request.GET.get("queue")
    return None if value is None else queue_name(value, "?queue=")


def whole(request: HttpRequest, name: str, default: int, low: int, high: int) -> int:
    """A whole number from the query string, between low and high; 400 naming the parameter."""
    raw = request.GET.get(name)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        value = low - 1
    if not low <= value <= high:
        raise ApiError(400, f"?{name}= must be a whole number from {low} to {high}, not {raw!r}")
    return value

