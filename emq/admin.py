from .dashboard import admin as _dashboard_admin  # noqa: F401
