"""A durable job on its page: its journal (done steps, sleeps, signals, children), the signal it
waits for, and the small form that sends one (``emq.signal``)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from django.contrib import messages
from django.http import HttpRequest

from ..core import journal, journal_ops
from ..core.engine import Queue
from .masking import Masked


@dataclass(frozen=True)
class Row:
    """One entry as the page shows it: times in server ms (the reltime tag's unit), the value as JSON."""

    name: str
    kind: str
    finished_ms: int | None
    value: str
    until_ms: int | None


def rows(fields: dict[str, Any]) -> list[Row]:
    """The journal of a job's stored fields, oldest first; a wait in progress last (finished_ms None).
    Secret-looking keys inside results are masked, as in the job's own result."""
    mask = Masked()
    return [Row(s.name, s.kind, _ms(s.finished), "" if s.result is None and s.kind == "sleep" else
                json.dumps(mask.value(s.result), ensure_ascii=False, indent=1), _ms(s.until))
            for s in journal.steps_of(fields)]


def _ms(when: Any) -> int | None:
    return None if when is None else int(when.timestamp() * 1000)


def send_signal(request: HttpRequest, queue: Queue) -> None:
    """The job page's "Send signal": a name and an optional JSON payload, to one job."""
    job_id, name = request.POST.get("ids", ""), request.POST.get("name", "").strip()
    raw = request.POST.get("payload", "").strip() or "null"
    try:
        json.loads(raw)
    except ValueError as exc:
        messages.error(request, f"Did not send signal {name!r} to job {job_id}: the payload is not JSON ({exc}).")
        return
    if not name:
        messages.error(request, f"Give the signal a name to send it to job {job_id}.")
        return
    status = journal_ops.signal_on(queue.name, queue.keys.prefix, job_id, name, raw)
    if status == "ok":
        messages.success(request, f"Sent signal {name!r} to job {job_id} in queue {queue.name}: the job took it.")
    else:
        why = {"sent": "a signal of that name came before", "late": "its wait for it timed out",
               "missing": "no such job"}.get(status, f"it has ended ({status})")
        messages.warning(request, f"Job {job_id} did not take signal {name!r}: {why}.")
