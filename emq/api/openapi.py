"""``GET /openapi.json``: the API's OpenAPI 3.1 document, built from the route table and the schemas."""

from __future__ import annotations

from http import HTTPStatus
from typing import Any

from django.conf import settings
from django.http import HttpRequest, JsonResponse

from .. import __version__
from .replies import ok
from .routes import PATH_HELP, ROUTES, Route
from .schemas import schemas

ERROR = {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}
SCOPED_ERRORS = (401, 403, 503)


def document(base: str) -> dict[str, Any]:
    """The OpenAPI document of every route, served under base (the mount, e.g. "/emq/api")."""
    paths: dict[str, dict[str, Any]] = {}
    for route in ALL:
        paths.setdefault(route.openapi_path(), {})[route.method.lower()] = _operation(route)
    return {
        "openapi": "3.1.0",
        "info": {"title": "emq HTTP API", "version": __version__,
                 "description": "Enqueue, read, cancel and retry emq jobs; queue counts; live events (SSE)."},
        "servers": [{"url": base}],
        "paths": paths,
        "components": {"schemas": schemas(), "securitySchemes": {
            "bearer": {"type": "http", "scheme": "bearer",
                       "description": "A token of EMQ_API_TOKENS; its scopes: read, enqueue, control."},
            "session": {"type": "apiKey", "in": "cookie", "name": settings.SESSION_COOKIE_NAME,
                        "description": "A staff user's session: read needs the dashboard's view permission, "
                                       "enqueue and control its change permission; POST sends X-CSRFToken."},
        }},
    }


def _operation(route: Route) -> dict[str, Any]:
    op: dict[str, Any] = {"operationId": route.name, "summary": route.summary,
                          "security": [{"bearer": [route.scope]}, {"session": [route.scope]}] if route.scope else []}
    params = [{"name": n, "in": "path", "required": True, "schema": {"type": "string"}, "description": PATH_HELP[n]}
              for n in route.path_params()]
    params += [{"name": p.name, "in": p.where, "required": False, "schema": p.schema, "description": p.help}
               for p in route.params]
    if params:
        op["parameters"] = params
    if route.body:
        op["requestBody"] = {"required": True, "content": {"application/json": {
            "schema": {"$ref": f"#/components/schemas/{route.body}"}}}}
    op["responses"] = {str(status): _answer(route, status, schema) for status, schema in route.answers}
    for status in (*route.errors, *(SCOPED_ERRORS if route.scope else ())):
        op["responses"][str(status)] = {"description": HTTPStatus(status).phrase, "content": ERROR}
    return op


def _answer(route: Route, status: int, schema: str) -> dict[str, Any]:
    if route.stream:
        return {"description": "Server-Sent Events: each `data` an Event object, each `id` a Last-Event-ID.",
                "content": {"text/event-stream": {"schema": {"type": "string"}}}}
    body = {"$ref": f"#/components/schemas/{schema}"} if schema else {"type": "object"}
    return {"description": HTTPStatus(status).phrase, "content": {"application/json": {"schema": body}}}


def view(request: HttpRequest) -> JsonResponse:
    """This document, its server the path the project mounted the API at."""
    return ok(document(request.path.rsplit("/", 1)[0]))


ROUTE = Route("GET", "openapi.json", view, None, "emq_api_openapi", "This document (OpenAPI 3.1).",
              answers=((200, ""),))
ALL: tuple[Route, ...] = (*ROUTES, ROUTE)
