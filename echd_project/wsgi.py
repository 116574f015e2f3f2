"""WSGI entry point of the echd project: it refuses the development SECRET_KEY with DEBUG off."""

import os

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "echd_project.settings")
if settings.INSECURE_KEY:
    raise ImproperlyConfigured(settings.DEV_KEY_REFUSAL)
application = get_wsgi_application()
