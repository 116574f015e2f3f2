"""The overview's worker settings (change permission): concurrency, queues and weights, pause and resume, for
one worker or all, kept on the server until cleared (``emq.core.overrides``, as ``manage.py emq workers``)."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import HttpRequest

from ..core import overrides
from ..core.engine import Queue
from ..errors import ConfigurationError
from .queries import prefix


def _selector(request: HttpRequest) -> str:
    worker = request.POST.get("worker", "").strip()
    return overrides.selector_of(worker or None, not worker)  # no worker named: every worker


def _told(request: HttpRequest, selector: str, now: dict[str, Any], woken: list[str]) -> None:
    who = "every worker" if selector == overrides.ALL else f"worker {selector}"
    said = ", ".join(f"{k} {','.join(v) if isinstance(v, list) else v}" for k, v in sorted(now.items())) or "nothing"
    reach = f"{len(woken)} live worker(s) take it within 2 s" if woken else "no live worker is named by it now"
    messages.success(request, f"Stored for {who}: {said}. {reach}; it holds after a restart, until cleared.")


def worker_set(request: HttpRequest, queue: Queue) -> None:
    """Store a concurrency and/or queues for a worker (its id, host or host:pid) or, with none named, all."""
    changes: dict[str, Any] = {}
    try:
        selector = _selector(request)
        if request.POST.get("concurrency", "").strip():
            changes["concurrency"] = overrides.check_concurrency(request.POST["concurrency"].strip())
        if request.POST.get("queues", "").strip():
            changes["queues"] = list(overrides.check_queues(request.POST["queues"]))
        if not changes:
            raise ConfigurationError("give a concurrency and/or queues (e.g. mail:5,default:1)")
    except ConfigurationError as exc:
        messages.error(request, f"Nothing stored: {exc}.")
        return
    _told(request, selector, *overrides.change(prefix(), selector, changes))


def _pausing(pause: bool):
    def handler(request: HttpRequest, queue: Queue) -> None:
        selector = _selector(request)
        _told(request, selector, *overrides.change(prefix(), selector, {"paused": pause}))

    return handler


def worker_clear(request: HttpRequest, queue: Queue) -> None:
    """Forget what was stored for a worker (none named: every stored worker setting)."""
    worker = request.POST.get("worker", "").strip() or None
    gone, woken = overrides.forget(prefix(), worker)
    who = f"worker {worker}" if worker else "every worker"
    messages.success(request, f"Cleared the settings stored for {who} ({gone}); {len(woken)} live worker(s) go back "
                              "to their command line's within 2 s.")


HANDLERS = {"worker_set": worker_set, "worker_pause": _pausing(True), "worker_resume": _pausing(False),
            "worker_clear": worker_clear}
LABELS = {"worker_set": "Set worker settings", "worker_pause": "Pause worker", "worker_resume": "Resume worker",
          "worker_clear": "Clear worker settings"}
