"""URLs of the echd project: the admin (with emq's dashboard) and the demo views."""

from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
    path("demo/", include("demo.urls")),
]
