"""WSGI entry point of the echd project."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "echd_project.settings")
application = get_wsgi_application()
