"""JSON, never pickle: encode a job's arguments, naming the one that cannot be encoded.

Arguments must round-trip: what a job receives equals what was enqueued. So besides values
JSON cannot hold, dict keys that are not strings (JSON would turn ``{1: "a"}`` into
``{"1": "a"}``, and ``{True: 1}`` into ``{"true": 1}``) and nesting deeper than MAX_DEPTH (a
decoder's recursion limit on the worker) are refused here. Tuples become lists, as in any JSON.
"""

from __future__ import annotations

import json
import reprlib
from typing import Any

from ..errors import PayloadTooLarge
from . import config

_encoder = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":"))
# What _encoder.encode runs, made once: encode() builds it anew on every call, which cost an enqueue
# of a short call more than encoding it did. Without the circular-reference check (markers None): a
# cycle ends in RecursionError, which encode_args reports as any value nested too deep.
_c_encoder = json.encoder.c_make_encoder and json.encoder.c_make_encoder(
    None, _encoder.default, json.encoder.encode_basestring, None, ":", ",", False, False, False)
MAX_DEPTH = 100  # lists and dicts inside one another, at most
_SCALARS = (str, int, float, bool, type(None))
EMPTY = ("[]", "{}")  # what no arguments encode to


def dumps(value: Any) -> str:
    """Compact JSON; NaN and Infinity are refused (they are not JSON)."""
    return _encoder.encode(value)


def encode_args(name: str, args: tuple, kwargs: dict, limit: int | None = None) -> tuple[str, str]:
    """Encode a call's arguments or raise TypeError naming the argument that is not JSON.

    limit: EMQ_MAX_PAYLOAD when the caller read it already (an enqueue's plan); None reads it now.
    """
    limit = config.get("EMQ_MAX_PAYLOAD") if limit is None else limit
    if not args and not kwargs:  # a call without arguments: nothing to encode or check but the size
        if len(EMPTY[0]) + len(EMPTY[1]) > limit:
            _too_large(name, len(EMPTY[0]) + len(EMPTY[1]), limit)
        return EMPTY
    try:
        a = _arguments(args) if args else EMPTY[0]  # a tuple encodes as a list
        k = _arguments(kwargs) if kwargs else EMPTY[1]
    except (TypeError, ValueError, RecursionError):
        _raise_for_first_bad(name, args, kwargs)
        raise
    _check_shapes(name, args, kwargs)
    size = len(a) + len(k) if a.isascii() and k.isascii() else len(a.encode()) + len(k.encode())
    if size > limit:
        _too_large(name, size, limit)
    return a, k


def _arguments(value: tuple | dict) -> str:
    """``dumps`` of a call's arguments, by the encoder made once when the interpreter has it."""
    return "".join(_c_encoder(value, 0)) if _c_encoder else dumps(list(value) if isinstance(value, tuple) else value)


def _too_large(name: str, size: int, limit: int) -> None:
    raise PayloadTooLarge(
        f"arguments of {name} encode to {size} bytes, over EMQ_MAX_PAYLOAD ({limit}); "
        "store large data elsewhere (a model row, a file) and pass its id"
    )


def _check_shapes(name: str, args: tuple, kwargs: dict) -> None:
    """Refuse what JSON would silently change (non-string keys) or a worker could not decode (depth)."""
    for value in (*args, *kwargs.values()):
        if not isinstance(value, _SCALARS) and shape_problem(value):  # rare: label it only then
            for label, v in _labelled(args, kwargs):
                if not isinstance(v, _SCALARS) and (problem := shape_problem(v)):
                    raise TypeError(f"{label} of {name} {problem}")


def shape_problem(value: Any, depth: int = 1) -> str | None:
    """Why a JSON-encodable value would not come back equal, or None when it would."""
    if depth > MAX_DEPTH:
        return f"nests lists/dicts deeper than {MAX_DEPTH} levels; flatten it or store it elsewhere and pass an id"
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                return (f"has the dict key {key!r} ({type(key).__name__}); JSON keys are strings, so it would "
                        "arrive changed: convert the keys with str() before enqueueing")
            if not isinstance(item, _SCALARS) and (problem := shape_problem(item, depth + 1)):
                return problem
    elif isinstance(value, (list, tuple)):
        for item in value:
            if not isinstance(item, _SCALARS) and (problem := shape_problem(item, depth + 1)):
                return problem
    return None


def _labelled(args: tuple, kwargs: dict) -> list[tuple[str, Any]]:
    labelled = [(f"argument {i} ({reprlib.repr(v):.40})", v) for i, v in enumerate(args)]
    return labelled + [(f"keyword argument {key!r}", v) for key, v in kwargs.items()]


def _raise_for_first_bad(name: str, args: tuple, kwargs: dict) -> None:
    if any(not isinstance(key, str) for key in kwargs):
        raise TypeError(f"keyword argument names of {name} must be strings")
    _check_shapes(name, args, kwargs)  # too deep for the encoder: say which argument
    for label, value in _labelled(args, kwargs):
        try:
            dumps(value)
        except (TypeError, ValueError) as exc:
            raise TypeError(
                f"{label} of {name} is not JSON ({type(value).__name__}: {exc}); "
                "pass JSON values (str, int, float, bool, None, list, dict) such as an id or an ISO date"
            ) from None


CUT = f"… (nested deeper than {MAX_DEPTH} levels: cut here)"


def cut_deep(value: Any) -> Any:
    """A decoded value for display, each list or dict nested past MAX_DEPTH levels replaced by CUT (in place).

    enqueue refuses deeper values, so only one written past emq is deeper; walking or printing it
    whole would overflow Python's stack, so this walks with a loop, never a recursion.
    """
    stack = [(value, 1)] if isinstance(value, dict | list) else []
    while stack:
        node, depth = stack.pop()
        for k, v in list(node.items() if isinstance(node, dict) else enumerate(node)):
            if isinstance(v, dict | list):
                if depth >= MAX_DEPTH:
                    node[k] = CUT
                else:
                    stack.append((v, depth + 1))
    return value
