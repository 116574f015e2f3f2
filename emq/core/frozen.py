"""Frozen dataclass values built at the speed of a plain object, for the hot paths that make one a job."""

from __future__ import annotations

from typing import Any, TypeVar

T = TypeVar("T")
_new = object.__new__
_set = object.__setattr__  # a frozen dataclass refuses its own __setattr__, __dict__ included


def built(cls: type[T], values: dict[str, Any]) -> T:
    """An instance of a frozen dataclass from every field's value, by name, without its ``__init__``.

    A frozen dataclass's ``__init__`` sets each field through ``object.__setattr__``: for the 15
    fields of a claimed job that is most of the cost of decoding a claim, and the worker's loop
    decodes one a job (``records.Claimed``). By name, not zipped with the fields in order (a zip a
    job costs a claim's decode more), and as one dict that becomes the instance's own
    ``__dict__`` (pass a fresh one): keyword arguments cost a call as much as the dict, and filling
    an instance's dict key by key as much again. The result is the same frozen, comparable value;
    the callers pass every field (tests/test_hot_path.py compares with the constructor's).
    """
    obj = _new(cls)
    _set(obj, "__dict__", values)
    return obj
