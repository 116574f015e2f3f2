"""The scrape endpoint: every queue's metrics in Prometheus's text format (or OpenMetrics, when asked)."""

from __future__ import annotations

import hmac

from django.http import HttpRequest, HttpResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from ..core import config
from ..errors import ConfigurationError, ServerUnavailable
from .collect import QueueCollector, prometheus


def allowed(request: HttpRequest) -> bool:
    """A staff user, or the bearer of EMQ_METRICS_TOKEN (compared in constant time).

    Compared as UTF-8 bytes: ``compare_digest`` refuses str with non-ASCII characters (a TypeError,
    so a 500), and a header is whatever a caller sends.
    """
    user = getattr(request, "user", None)
    if user is not None and user.is_active and user.is_staff:
        return True
    token = config.get("EMQ_METRICS_TOKEN")
    scheme, _, given = request.headers.get("Authorization", "").partition(" ")
    return (bool(token) and scheme.lower() == "bearer"
            and hmac.compare_digest(given.strip().encode("utf-8", "surrogatepass"), str(token).encode()))


@never_cache
@require_GET
def view(request: HttpRequest) -> HttpResponse:
    """Scrape every registered queue: one pipelined round trip for all of them."""
    if not allowed(request):
        response = HttpResponse("emq metrics: log in as staff or send Authorization: Bearer <EMQ_METRICS_TOKEN>\n",
                                status=401, content_type="text/plain")
        response["WWW-Authenticate"] = 'Bearer realm="emq metrics"'
        return response
    try:
        prom = prometheus()
        registry = prom.CollectorRegistry(auto_describe=False)
        registry.register(QueueCollector())
        encode, content_type = prom.exposition.choose_encoder(request.headers.get("Accept", ""))
        body = encode(registry)
    except ConfigurationError as exc:
        return HttpResponse(f"{exc}\n", status=501, content_type="text/plain")
    except ServerUnavailable as exc:
        return HttpResponse(f"{exc}\n", status=503, content_type="text/plain")
    return HttpResponse(body, content_type=content_type)
