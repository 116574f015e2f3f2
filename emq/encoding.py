"""JSON, never pickle: encode a job's arguments, naming the one that cannot be encoded."""

from __future__ import annotations

import json
from typing import Any

from . import conf
from .errors import PayloadTooLarge

_encoder = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def dumps(value: Any) -> str:
    """Compact JSON; NaN and Infinity are refused (they are not JSON)."""
    return _encoder.encode(value)


def encode_args(name: str, args: tuple, kwargs: dict) -> tuple[str, str]:
    """Encode a call's arguments or raise TypeError naming the argument that is not JSON."""
    try:
        a, k = dumps(list(args)), dumps(kwargs)
    except (TypeError, ValueError):
        _raise_for_first_bad(name, args, kwargs)
        raise
    limit = conf.get("EMQ_MAX_PAYLOAD")
    size = len(a.encode()) + len(k.encode())
    if size > limit:
        raise PayloadTooLarge(
            f"arguments of {name} encode to {size} bytes, over EMQ_MAX_PAYLOAD ({limit}); "
            "store large data elsewhere (a model row, a file) and pass its id"
        )
    return a, k


def _raise_for_first_bad(name: str, args: tuple, kwargs: dict) -> None:
    if any(not isinstance(key, str) for key in kwargs):
        raise TypeError(f"keyword argument names of {name} must be strings")
    labelled = [(f"argument {i} ({v!r:.40})", v) for i, v in enumerate(args)]
    labelled += [(f"keyword argument {key!r}", v) for key, v in kwargs.items()]
    for label, value in labelled:
        try:
            dumps(value)
        except (TypeError, ValueError) as exc:
            raise TypeError(
                f"{label} of {name} is not JSON ({type(value).__name__}: {exc}); "
                "pass JSON values (str, int, float, bool, None, list, dict) such as an id or an ISO date"
            ) from None
