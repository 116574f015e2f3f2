"""Who may call the API: a bearer token of ``EMQ_API_TOKENS`` with its scopes, or a staff session.

A request with an ``Authorization`` header is judged by its token alone (a session beside it is
ignored), compared in constant time with every configured token. Without one, a logged-in staff
user is let in with the dashboard's permissions (view: ``read``; change: ``enqueue``, ``control``),
and the unsafe methods must pass Django's CSRF check, as a form of the dashboard would.
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.http import HttpRequest
from django.middleware.csrf import CsrfViewMiddleware

from ..core import config
from .replies import ApiError

SCOPES = ("read", "enqueue", "control")
# The dashboard's permissions a staff session needs for each scope (emq.models.Dashboard).
PERMISSIONS = {"read": "emq.view_dashboard", "enqueue": "emq.change_dashboard", "control": "emq.change_dashboard"}
SAFE = ("GET", "HEAD", "OPTIONS")
REALM = 'Bearer realm="emq api"'


@dataclass(frozen=True)
class Caller:
    """Who made a request: a token's client name or a user's, and the scopes they hold."""

    name: str
    scopes: frozenset[str]
    session: bool = False


def authenticate(request: HttpRequest, scope: str) -> Caller:
    """The caller of request if it holds scope; else ApiError 401 (who?) or 403 (not allowed)."""
    header = request.META.get("HTTP_AUTHORIZATION")
    caller = _bearer(header) if header is not None else _session(request)
    if scope not in caller.scopes:
        raise ApiError(403, f"{caller.name} lacks the {scope!r} scope this call needs "
                            f"(it holds: {', '.join(sorted(caller.scopes)) or 'none'})",
                       headers={"WWW-Authenticate": f'{REALM}, error="insufficient_scope", scope="{scope}"'})
    if caller.session and request.method not in SAFE:
        _check_csrf(request)
    return caller


def _bearer(header: str) -> Caller:
    scheme, _, given = header.strip().partition(" ")
    if scheme.lower() != "bearer" or not given.strip():
        raise ApiError(401, "send Authorization: Bearer <token>, a token of EMQ_API_TOKENS",
                       headers={"WWW-Authenticate": REALM})
    # Bytes, not str: compare_digest refuses str with non-ASCII characters, and a header may hold any.
    seen = given.strip().encode("utf-8", "surrogatepass")
    found = None
    for name, entry in _tokens().items():  # every token is compared: the time says nothing of which matched
        token = entry.get("token") if isinstance(entry, Mapping) else None
        if isinstance(token, str) and token and hmac.compare_digest(seen, token.encode("utf-8", "surrogatepass")):
            found = found or Caller(f"token {name!r}", frozenset(_scopes(entry)))
    if found is None:
        raise ApiError(401, "the bearer token is not one of EMQ_API_TOKENS",
                       headers={"WWW-Authenticate": f'{REALM}, error="invalid_token"'})
    return found


def _session(request: HttpRequest) -> Caller:
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        raise ApiError(401, "send Authorization: Bearer <token> (EMQ_API_TOKENS), or log in as a staff user",
                       headers={"WWW-Authenticate": REALM})
    if not (user.is_active and user.is_staff):
        raise ApiError(403, f"user {user.get_username()!r} is not staff: the API takes staff sessions only")
    scopes = frozenset(s for s, perm in PERMISSIONS.items() if user.has_perm(perm))
    return Caller(f"user {user.get_username()!r}", scopes, session=True)


class _CsrfCheck(CsrfViewMiddleware):
    """Django's own CSRF check, answering the reason it refuses instead of a 403 page."""

    def _reject(self, request: HttpRequest, reason: str) -> Any:
        return reason


def _check_csrf(request: HttpRequest) -> None:
    check = _CsrfCheck(lambda request: None)
    check.process_request(request)
    reason = check.process_view(request, None, (), {})
    if reason:
        raise ApiError(403, f"CSRF check failed ({reason}): a session must send the csrftoken cookie's value "
                            "in the X-CSRFToken header, or use a bearer token instead", code="csrf_failed")


def _tokens() -> Mapping[str, Any]:
    tokens = config.get("EMQ_API_TOKENS")
    return tokens if isinstance(tokens, Mapping) else {}


def _scopes(entry: Mapping[str, Any]) -> set[str]:
    scopes = entry.get("scopes")
    return set(scopes) & set(SCOPES) if isinstance(scopes, list | tuple | set | frozenset) else set()


def token_problems() -> list[str]:
    """What is wrong with EMQ_API_TOKENS, one sentence each ([]: nothing); the system check reports them."""
    tokens = config.get("EMQ_API_TOKENS")
    if not isinstance(tokens, Mapping):
        return [f"EMQ_API_TOKENS must be a dict of client name -> {{'token': ..., 'scopes': [...]}}, "
                f"not {type(tokens).__name__}"]
    problems, seen = [], {}
    for name, entry in tokens.items():
        where = f"EMQ_API_TOKENS[{name!r}]"
        if not isinstance(entry, Mapping):
            problems.append(f"{where} must be a dict {{'token': ..., 'scopes': [...]}}")
            continue
        token, scopes = entry.get("token"), entry.get("scopes")
        if not isinstance(token, str) or len(token) < 16:
            problems.append(f"{where}['token'] must be a string of at least 16 characters, "
                            "e.g. secrets.token_urlsafe(32)")
        elif token in seen:
            problems.append(f"{where} has the same token as EMQ_API_TOKENS[{seen[token]!r}]: give each its own")
        else:
            seen[token] = name
        if not isinstance(scopes, list | tuple) or not scopes or set(scopes) - set(SCOPES):
            problems.append(f"{where}['scopes'] must be a non-empty list of {list(SCOPES)}, not {scopes!r}")
        extra = set(entry) - {"token", "scopes"}
        if extra:
            problems.append(f"{where} has unknown keys {sorted(extra)}; it takes 'token' and 'scopes'")
    return problems
