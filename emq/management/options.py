"""Checks of command-line options shared by emq's commands: a bad value is refused before anything starts."""

from __future__ import annotations

from django.core.management.base import CommandError

from ..core import config, topology
from ..errors import ConfigurationError


def queue_names(text: str | None, option: str = "--queues") -> list[str]:
    """Comma-separated queue names (default: EMQ_DEFAULT_QUEUE); refuses a list that names none."""
    if text is None:
        return [config.get("EMQ_DEFAULT_QUEUE")]
    names = [q.strip() for q in text.split(",") if q.strip()]
    if not names:
        raise CommandError(f"{option} {text!r} names no queue: give comma-separated names, e.g. {option} default,mail")
    for name in names:
        try:
            topology.check_name(name.partition(":")[0].strip())  # high:5 is queue high of weight 5
        except ConfigurationError as exc:
            raise CommandError(f"{option}: {exc}") from None
    return names


def at_least(option: str, value: float | None, low: float) -> None:
    """Refuse a number below low (None: the option was not given)."""
    if value is not None and value < low:
        raise CommandError(f"{option} must be at least {low:g}, not {value:g}")


def port(option: str, value: int | None) -> None:
    """Refuse a TCP port outside 1..65535."""
    if value is not None and not 0 < value < 65536:
        raise CommandError(f"{option} must be a TCP port (1..65535), not {value}")
