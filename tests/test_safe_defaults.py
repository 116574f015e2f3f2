"""Safe defaults: DEBUG off unless set, no development key in production, a clean ``check --deploy``,
and Django's error page never showing the password inside EMQ_URL."""

from __future__ import annotations

import subprocess
import sys

from django.test import RequestFactory, override_settings
from django.views.debug import technical_500_response

from tests.procs import ROOT

STRONG_KEY = "k" * 20 + "Q7#x!mZ2@pL9$wR4%vT8^yU3&nB6*cD1(eF5)gH0"


def manage(*args: str, **env: str) -> subprocess.CompletedProcess:
    base = {"PATH": "/usr/bin:/bin", "DATABASE_URL": "sqlite://:memory:", "HOME": "/tmp"}
    return subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env={**base, **env},
                          capture_output=True, text=True, timeout=60)


def test_without_debug_the_development_key_is_refused_with_what_to_do():
    r = manage("check")
    assert r.returncode != 0
    assert "SECRET_KEY is the development key while DEBUG is off" in r.stderr and "DEBUG=1" in r.stderr


def test_without_debug_the_wsgi_application_refuses_the_development_key():
    r = subprocess.run([sys.executable, "-c", "import echd_project.wsgi"], cwd=ROOT, capture_output=True, text=True,
                       env={"PATH": "/usr/bin:/bin", "DATABASE_URL": "sqlite://:memory:", "HOME": "/tmp"}, timeout=60)
    assert r.returncode != 0 and "SECRET_KEY is the development key while DEBUG is off" in r.stderr


def test_a_worker_side_command_starts_without_debug_because_it_signs_nothing():
    r = manage("emq_worker", "--help")
    assert r.returncode == 0, r.stderr


def test_debug_allows_the_development_key():
    assert manage("check", DEBUG="1").returncode == 0


def test_check_deploy_is_clean_under_the_documented_production_environment():
    r = manage("check", "--deploy", "--fail-level", "WARNING", SECRET_KEY=STRONG_KEY, ALLOWED_HOSTS="jobs.example.com",
               SECURE_SSL_REDIRECT="1")
    assert r.returncode == 0, r.stdout + r.stderr


def test_the_error_page_masks_the_password_of_emq_url_in_settings_and_frames():
    secret, db_secret = "hunt" + "er2", "pg-pass" + "-77"  # not in this file's source, which the page shows
    url = f"redis://app:{secret}@valkey.internal:6379/0"
    with override_settings(DEBUG=True, EMQ_URL=url, DATABASE_URL=f"postgres://u:{db_secret}@db/x"):
        try:
            server = url  # noqa: F841  (a frame's local variable holding the URL)
            raise ConnectionError("cannot reach the server")
        except ConnectionError:
            html = technical_500_response(RequestFactory().get("/"), *sys.exc_info()).content.decode()
    assert secret not in html and db_secret not in html
    assert "valkey.internal" in html
