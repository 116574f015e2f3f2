"""An encrypted job as stored: which fields hold its sealed values and in what form (``stored`` reads and
writes a job; ``sealed`` is the cipher).

A job is encrypted when its ``kwargs`` field is sealed (``sealed.MARK`` and a token: never JSON, so never
a plain job's): it holds the whole call, ``[args, kwargs]``, and ``args`` stays a JSON list, ``[]`` at
the mint, which a flow's script may put a parent's result in front of (``_flow.lua``) without reading
the call. Its result is a sealed text inside a JSON string (a script splices it into a child's arguments
as any result), its error and progress note are sealed texts, and each entry of its error history holds
the sealed error's first line (all of it: a token has no newline). Everything else (name, group, queue,
state, times, counters, reason, meta, origin) stays plain: the scripts work with it. Readers get the
sealed fields opened (``opened``), or ENCRYPTED when no key opens one, and the pseudo-field ``encrypted``
("yes"). A release before encryption runs no encrypted job (it ends dead as corrupt: kwargs is not
JSON), so a project turns encryption on once every worker runs a release that has it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from . import sealed
from .encoding import dumps

if TYPE_CHECKING:
    from .records import Claimed

KWARGS, ENCRYPTED, FLAG = "kwargs", "encrypted", "encrypted"  # FLAG: the pseudo-field readers get, "yes"
OPENED = ("args", KWARGS, "result", "error", "errors", "progress_note", FLAG)  # what an encrypted job seals
TEXTS = ("error", "progress_note")
CANNOT_DECRYPT = "cannot decrypt"  # the fault, and the dead reason, of an encrypted job no key of its worker opens


def is_encrypted(h: dict[str, Any]) -> bool:
    """Whether the job of these stored fields is encrypted (its kwargs field is sealed). ``signal.lua`` asks the
    same of the server (its call field starts with ``sealed.MARK``, passed to it)."""
    return sealed.is_sealed(h.get(KWARGS))


def seal_call(args_json: str, kwargs_json: str, when: bool = True) -> tuple[str, str]:
    """An encrypted job's args and kwargs fields for a call: "[]" and the sealed ``[args, kwargs]`` (when
    False: the call's as they are, a plain job's)."""
    return ("[]", sealed.seal(f"[{args_json},{kwargs_json}]")) if when else (args_json, kwargs_json)


def open_call(args_field: str, kwargs_field: str) -> tuple[list, dict]:
    """An encrypted job's arguments: the results a flow put in front (each opened when sealed, and those in
    a list of results, a chord's), then the call's. CannotDecrypt when no key opens it; ValueError when what
    it holds is not a call."""
    call = json.loads(sealed.unseal(kwargs_field))
    front = json.loads(args_field) if args_field and args_field != "[]" else []
    if not (isinstance(call, list) and len(call) == 2 and isinstance(call[0], list) and isinstance(call[1], dict)
            and isinstance(front, list)):
        raise ValueError("an encrypted call is not [args, kwargs]")
    return [[_result(r) for r in v] if isinstance(v, list) else _result(v) for v in front] + call[0], call[1]


def _result(value: Any) -> Any:
    """A parent's result a flow's script put among a child's arguments: a sealed one opened."""
    return json.loads(sealed.unseal(value)) if sealed.is_sealed(value) else value


def open_claimed(cls: type[Claimed], f: tuple, now: int) -> Claimed | None:
    """A claimed encrypted job (f: its 7 fields of a bclaim reply) with its call opened and decoded as any
    other; with the fault CANNOT_DECRYPT when no key opens it; None when what it holds is not a call (then it
    is corrupt as any field that does not decode). Off the plain jobs' path: ``Claimed.from_reply``'s fallback."""
    jid, token, name, args, kwargs, group, rest = f
    try:
        args, kwargs = open_call(args, kwargs)
    except sealed.CannotDecrypt as exc:
        return cls(jid, int(token), name or "", [], {}, 1000, 1, (1.0, 1.0), group or "", now, now,
                   fault=f"{CANNOT_DECRYPT}: {exc}", sealed=True)
    except (ValueError, TypeError):
        return None
    (job,) = cls.from_reply([now, jid, token, name, "[]", "{}", group, rest])  # its other fields, as any job's
    job.__dict__.update(args=args, kwargs=kwargs, sealed=True)  # a frozen value, just made: no one holds it yet
    return job


def seal_result(result_json: str) -> str:
    """An encrypted job's result field: its sealed JSON inside a JSON string."""
    return f'"{sealed.seal(result_json)}"'


def open_result(field: str) -> str:
    """The JSON an encrypted job's result field holds (CannotDecrypt when no key opens it)."""
    return sealed.unseal(field[1:-1]) if field.startswith('"' + sealed.MARK) else field


def opened(h: dict[str, Any]) -> dict[str, Any]:
    """A job's fields with an encrypted job's sealed ones opened, ENCRYPTED where no key opens one, and
    FLAG "yes"; a plain job's fields as they are."""
    if not is_encrypted(h):
        return h
    out = dict(h)
    out[FLAG] = "yes"
    try:
        args, kwargs = open_call(h.get("args") or "[]", h[KWARGS])
        out["args"], out[KWARGS] = dumps(args), dumps(kwargs)
    except ValueError:  # CannotDecrypt, or a call that is not one: shown as encrypted, kept as stored
        out["args"] = out[KWARGS] = ENCRYPTED
    if out.get("result") is not None:
        out["result"] = _opened(open_result, out["result"])
    for name in TEXTS:
        if name in out:
            out[name] = open_text(out[name])
    if out.get("errors"):
        out["errors"] = _opened_errors(out["errors"])
    return out


def open_text(value: Any) -> Any:
    """A text of an encrypted job (its error, its progress note) opened, or ENCRYPTED; any other value as it is."""
    return _opened(sealed.unseal, value) if sealed.is_sealed(value) else value


def _opened(how: Callable[[str], str], value: str) -> str:
    try:
        return how(value)
    except ValueError:
        return ENCRYPTED


def _opened_errors(raw: str) -> str:
    """An encrypted job's error history with each entry's sealed error opened to its first line."""
    try:
        entries = json.loads(raw)
    except ValueError:
        return raw
    if not isinstance(entries, list):
        return raw
    for entry in entries:
        if isinstance(entry, dict) and sealed.is_sealed(entry.get("error")):
            entry["error"] = open_text(entry["error"]).split("\n", 1)[0]
    return dumps(entries)
