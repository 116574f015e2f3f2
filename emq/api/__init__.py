"""emq's optional HTTP API: enqueue, read, cancel and retry jobs, queue counts and live events, as JSON.

A project mounts it with ``path("emq/api/", include("emq.api.urls"))``; one that does not gets
nothing. Clients authenticate with ``Authorization: Bearer <token>`` from ``EMQ_API_TOKENS``
(scopes ``read``, ``enqueue``, ``control``) or a staff session with CSRF. The route table
(``routes.py``) is the one source of both the URLs and the OpenAPI document.
"""
