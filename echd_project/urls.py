"""URLs of the echd project: the admin (with emq's dashboard), emq's HTTP API and the demo views."""

from django.contrib import admin
from django.urls import include, path
from django.views.generic import TemplateView

import emq.metrics

admin.site.site_header = admin.site.site_title = "echd admin"

urlpatterns = [
    path("", TemplateView.as_view(template_name="home.html"), name="home"),
    path("admin/", admin.site.urls),
    path("demo/", include("demo.urls")),
    path("metrics", emq.metrics.view),  # Prometheus: staff users, or Authorization: Bearer <EMQ_METRICS_TOKEN>
    path("emq/api/", include("emq.api.urls")),  # the HTTP API: bearer tokens of EMQ_API_TOKENS, or staff sessions
]
