"""Prometheus metrics: ``emq.metrics.view`` for every queue, ``emq_worker --metrics-port`` per worker.

    # urls.py
    import emq.metrics
    urlpatterns = [path("metrics", emq.metrics.view), ...]

The view answers staff users and requests bearing ``Authorization: Bearer <EMQ_METRICS_TOKEN>``.
Needs prometheus-client (``pip install "django-emq[metrics]"``); importing this module does not.
"""

from .view import view

__all__ = ["view"]
