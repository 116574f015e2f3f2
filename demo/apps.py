"""The demo app: a few jobs and views that show emq working in a project."""

from django.apps import AppConfig


class DemoConfig(AppConfig):
    name = "demo"
    default_auto_field = "django.db.models.BigAutoField"
