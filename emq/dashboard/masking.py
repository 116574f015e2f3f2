"""What the dashboard never shows: the values of secret-looking parameters, wherever they appear.

A parameter is secret when its name matches ``EMQ_MASK`` (the rule is ``emq.jobs.secrets``'s, the
one a progress note is masked by as the job writes it). Keyword arguments are matched by name,
positional ones by the name their position has in the job's signature (when this process knows
the job), dict keys anywhere inside arguments and results by name; and every secret value found is
then scrubbed from the job's result, error and progress texts, where a message may repeat it.

Stored values are decoded for display with their nesting cut at MAX_DEPTH levels (``decode``): an
enqueue refuses deeper values, so only a value written past emq is that deep, and walking or
printing it whole would overflow Python's stack (a 500 instead of the page).
"""

from __future__ import annotations

import inspect
import json
from dataclasses import dataclass, field
from typing import Any

from ..core.encoding import CUT, MAX_DEPTH, cut_deep
from ..jobs import lookup
from ..jobs.secrets import MASK, secret

__all__ = ["CUT", "MASK", "MAX_DEPTH", "Masked", "clean", "decode", "parameter_names", "secret"]
MIN_SECRET = 3  # characters: shorter values are not scrubbed from texts (they would match everywhere)
TEXTS = ("error", "errors", "progress_note")  # scrubbed of every secret value seen in the arguments


@dataclass
class Masked:
    """A job's values with secrets replaced, and the secret values seen (to scrub texts with)."""

    found: set[str] = field(default_factory=set)

    def value(self, value: Any, name: Any = None, depth: int = 1) -> Any:
        """The value with secrets masked; lists and dicts nested past MAX_DEPTH become CUT (a deeper walk overflows)."""
        if name is not None and secret(name):
            self._remember(value)
            return MASK
        if isinstance(value, dict | list) and depth > MAX_DEPTH:
            return CUT
        if isinstance(value, dict):
            return {k: self.value(v, k, depth + 1) for k, v in value.items()}
        if isinstance(value, list):
            return [self.value(v, None, depth + 1) for v in value]
        return value

    def _remember(self, value: Any, depth: int = 1) -> None:
        if isinstance(value, dict | list) and depth <= MAX_DEPTH:
            for v in value.values() if isinstance(value, dict) else value:
                self._remember(v, depth + 1)
        elif not isinstance(value, dict | list) and value is not None and len(str(value)) >= MIN_SECRET:
            self.found.add(str(value))

    def text(self, text: str | None) -> str | None:
        """A result or error text with every secret value seen replaced by the mask."""
        if not text:
            return text
        for value in sorted(self.found, key=len, reverse=True):
            text = text.replace(value, MASK)
        return text


def parameter_names(job_name: str | None) -> list[str]:
    """The names positional arguments take in the job's signature ([] when unknown here)."""
    try:
        fn = lookup(job_name or "")
        names = [p.name for p in inspect.signature(fn.func).parameters.values()
                 if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL)]
    except Exception:  # an unknown job, a task module that fails to import: names unknown
        return []
    return names[1:] if fn.options.takes_context else names


def clean(fields: dict[str, str | None]) -> dict[str, str | None]:
    """A job's stored fields with secrets masked in args, kwargs and result, and scrubbed from texts."""
    m, out = Masked(), dict(fields)
    args, kwargs = _json(fields.get("args")), _json(fields.get("kwargs"))
    if isinstance(kwargs, dict):
        out["kwargs"] = _dump(m.value(kwargs))
    if isinstance(args, list):
        names = parameter_names(fields.get("fn"))
        out["args"] = _dump([m.value(v, names[i] if i < len(names) else None) for i, v in enumerate(args)])
    result = _json(fields.get("result"))
    if result is not None:
        out["result"] = m.text(_dump(m.value(result)))
    for name in TEXTS:
        if fields.get(name):
            out[name] = m.text(fields[name])
    return out


def decode(raw: str) -> Any:
    """A stored JSON text for display, lists and dicts nested past MAX_DEPTH cut (saying so); ValueError if not JSON."""
    try:
        return cut_deep(json.loads(raw))
    except RecursionError:  # deeper than the parser itself goes
        return CUT


def _json(raw: str | None) -> Any:
    try:
        return decode(raw) if raw else None
    except ValueError:
        return None


def _dump(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
