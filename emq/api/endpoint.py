"""A path's routes as one Django view: method, body size, caller and scope checked, errors as JSON.

The order is the cheap refusals first: a wrong method (405) and a body declared too large (413)
are answered before the caller is looked up or a byte of the body is read. Every call that may
change something is logged (``emq.api``, INFO) with who made it: the audit trail of the API.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.utils.cache import add_never_cache_headers
from django.views.decorators.csrf import csrf_exempt

from ..errors import ConfigurationError, JobNotFound, ServerUnavailable
from . import body, replies
from .auth import authenticate
from .replies import ApiError
from .routes import Route

log = logging.getLogger("emq.api")


def view_of(routes: Sequence[Route]) -> Callable[..., HttpResponse]:
    """The view of one path: dispatches on the method to its route's view."""
    by_method = {r.method: r for r in routes}
    allowed = ", ".join(sorted(by_method))

    @csrf_exempt  # a token needs none; a session is checked in auth.py, for the unsafe methods only
    def view(request: HttpRequest, **kwargs: Any) -> HttpResponse:
        route, caller = by_method.get(request.method or ""), None
        try:
            if route is None:
                raise ApiError(405, f"{request.method} is not answered here; use {allowed}",
                               headers={"Allow": allowed})
            body.check_length(request)
            if route.scope is not None:
                caller = authenticate(request, route.scope)
            response = route.view(request, **kwargs)
        except ApiError as exc:
            response = replies.error(exc)
        except JobNotFound as exc:
            response = replies.error(ApiError(404, str(exc), code="job_not_found"))
        except ConfigurationError as exc:
            response = replies.error(ApiError(400, str(exc)))
        except ServerUnavailable as exc:
            response = replies.error(ApiError(503, str(exc), headers={"Retry-After": "1"}))
        add_never_cache_headers(response)
        if caller is not None and route is not None and route.method != "GET":
            log.info("emq api: %s %s by %s: %s", request.method, request.path, caller.name, response.status_code)
        return response

    return view


def not_found_of(routes: Sequence[Route]) -> Callable[..., HttpResponse]:
    """The view of every path under the mount that no route has: a JSON 404 listing the routes."""
    known = ", ".join(f"{r.method} {r.openapi_path()}" for r in routes)

    @csrf_exempt
    def not_found(request: HttpRequest, **kwargs: Any) -> HttpResponse:
        return replies.error(ApiError(404, f"no route {request.method} {request.path}; the API has: {known}",
                                      code="no_route"))

    return not_found
