"""An enqueue's arguments checked against the job's signature, as calling the function would.

A wrong arity used to be accepted, retried on a worker and buried; now it is a TypeError at the
call. The check runs on every enqueue, so a job's shape is worked out once per function and the
common call (positional arguments only, a count the function takes) costs two comparisons.
"""

from __future__ import annotations

import functools
import inspect
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


@dataclass(frozen=True)
class Shape:
    """A job's signature (its context parameter left out) and the positional counts it surely takes."""

    signature: inspect.Signature
    least: float  # positional-only calls with at least this many arguments...
    most: float  # ...and at most this many bind without looking further

    def check(self, name: str, args: Sequence[Any], kwargs: dict[str, Any]) -> None:
        if not kwargs and self.least <= len(args) <= self.most:
            return
        try:
            self.signature.bind(*args, **kwargs)
        except TypeError as exc:
            raise TypeError(f"arguments do not fit job {name}{self.signature}: {exc}") from None


@functools.lru_cache(maxsize=4096)
def shape(func: Callable[..., Any], takes_context: bool) -> Shape | None:
    """The shape of a job function, or None when Python cannot tell its signature (then nothing is checked)."""
    try:
        sig = inspect.signature(func)
    except (TypeError, ValueError):
        return None
    params = list(sig.parameters.values())
    if takes_context and params and params[0].kind in POSITIONAL:
        params = params[1:]
    sig = sig.replace(parameters=params)
    positional = [p for p in params if p.kind in POSITIONAL]
    required_kw = any(p.kind == p.KEYWORD_ONLY and p.default is p.empty for p in params)
    least = math.inf if required_kw else sum(1 for p in positional if p.default is p.empty)
    most = math.inf if any(p.kind == p.VAR_POSITIONAL for p in params) else len(positional)
    return Shape(sig, least, most)


def check(name: str, func: Callable[..., Any], takes_context: bool, args: Sequence[Any], kwargs: dict) -> None:
    """Raise TypeError, naming the job and its signature, when these arguments would not bind."""
    s = shape(func, takes_context)
    if s is not None:
        s.check(name, args, kwargs)
