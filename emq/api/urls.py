"""The API's URLs, from its route table: mount them with ``path("emq/api/", include("emq.api.urls"))``.

Every path under the mount answers JSON, an unknown one too (a 404 listing the routes).
"""

from __future__ import annotations

from django.urls import path, re_path

from .endpoint import not_found_of, view_of
from .openapi import ALL

_paths = list(dict.fromkeys(r.path for r in ALL))
urlpatterns = [
    path(p, view_of([r for r in ALL if r.path == p]), name=next(r.name for r in ALL if r.path == p)) for p in _paths
]
urlpatterns.append(re_path(r"^", not_found_of(ALL), name="emq_api_not_found"))
