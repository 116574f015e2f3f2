"""A job as the API shows it: every field of ``emq.Job``, times as ISO 8601, secrets masked.

The masking rule is the dashboard's (``emq/dashboard/masking.py``: ``EMQ_MASK``, parameters by
name or position, dict keys anywhere, secret values scrubbed from texts); here it is applied to
decoded values rather than stored text, so the answer stays JSON whatever a secret looks like.
"""

from __future__ import annotations

import dataclasses
from datetime import datetime
from typing import Any

from ..core.records import Job
from ..dashboard import masking

TEXTS = ("error", "errors", "progress_note", "reason", "result", "meta", "steps")  # scrubbed of every secret value seen


def job_json(job: Job) -> dict[str, Any]:
    """The job's fields as JSON values, masked as the dashboard masks them."""
    out = {f.name: _plain(getattr(job, f.name)) for f in dataclasses.fields(job)}
    m = masking.Masked()
    if isinstance(job.args, list):
        names = masking.parameter_names(job.name)
        out["args"] = [m.value(v, names[i] if i < len(names) else None) for i, v in enumerate(out["args"])]
    out["kwargs"] = m.value(out["kwargs"])
    out["result"] = m.value(out["result"])
    out["meta"] = m.value(out["meta"])
    out["steps"] = [{**step, "result": m.value(step["result"])} for step in out["steps"]]  # a durable job's journal
    for name in TEXTS:  # after every value was masked: m knows all the secrets by now
        if name in out:
            out[name] = _scrubbed(m, out[name])
    return out


def _plain(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):  # a journal's Step
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    return value


def _scrubbed(m: masking.Masked, value: Any) -> Any:
    """Value with every secret seen replaced by the mask, in strings and in scalars that spell one."""
    if isinstance(value, dict):
        return {k: _scrubbed(m, v) for k, v in value.items()}
    if isinstance(value, list):
        return [_scrubbed(m, v) for v in value]
    if isinstance(value, str):
        return m.text(value)
    if value is not None and not isinstance(value, bool) and m.text(str(value)) != str(value):
        return masking.MASK
    return value
