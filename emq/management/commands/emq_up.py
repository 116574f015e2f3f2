"""``manage.py emq_up``: everything for development in one command (what ``make run`` calls)."""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import time
from datetime import timedelta

from django.core.management.base import BaseCommand, CommandError

from emq.connection import data_dir, mask, server_url
from emq.errors import EmqError

DEMO_RECURRENCE = "demo-add-every-3s"


class Command(BaseCommand):
    help = (
        "Start everything for development and stop it all together on Ctrl-C: the embedded Valkey "
        "(unless EMQ_URL is set), a Pump, a worker and the web server with the admin; creates a demo "
        "superuser (printing its credentials) and a demo recurrence whose jobs complete every few seconds."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("--addr", default="127.0.0.1:8000", help="address of the web server")
        parser.add_argument("--concurrency", type=int, default=4, help="worker threads")

    def handle(self, *args, **options) -> None:
        try:
            url = server_url()
        except EmqError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(f"valkey   {mask(url)}  (data in {data_dir()})")
        user, password = self._demo_user()
        self._demo_recurrence()
        procs = self._start(options)
        self.stdout.write(f"admin    http://{options['addr']}/admin/  user {user!r} password {password!r}")
        self._seed()
        self.stdout.write("Ctrl-C stops everything.")
        self._supervise(procs)

    def _demo_user(self) -> tuple[str, str]:
        from django.contrib.auth import get_user_model

        store = data_dir() / "demo-admin-password"
        store.parent.mkdir(parents=True, exist_ok=True)
        password = store.read_text().strip() if store.exists() else secrets.token_urlsafe(9)
        store.write_text(password)
        User = get_user_model()
        user, _ = User.objects.get_or_create(username="admin", defaults={"is_staff": True, "is_superuser": True})
        user.is_staff = user.is_superuser = True
        user.set_password(password)
        user.save()
        return "admin", password

    def _demo_recurrence(self) -> None:
        from emq.apps import autodiscover
        from emq.models import Recurrence

        autodiscover()
        row = Recurrence.objects.filter(name=DEMO_RECURRENCE).first() or Recurrence(name=DEMO_RECURRENCE)
        row.job, row.every, row.cron, row.args, row.enabled = "demo.jobs.add", timedelta(seconds=3), "", [2, 3], True
        row.full_clean()
        row.save()
        self.stdout.write(f"repeat   {DEMO_RECURRENCE!r}: demo.jobs.add(2, 3) minted every 3 s (edit it in the admin)")

    def _start(self, options) -> dict[str, subprocess.Popen]:
        py = [sys.executable, "manage.py"]
        # Development shows every outcome: completed jobs log at DEBUG (silent in production).
        verbose = {**os.environ, "EMQ_LOG_LEVEL": os.environ.get("EMQ_LOG_LEVEL", "DEBUG")}
        worker = [*py, "emq_worker", "--no-pump", "--concurrency", str(options["concurrency"])]
        return {
            "pump": subprocess.Popen([*py, "emq_pump"]),
            "worker": subprocess.Popen(worker, env=verbose),
            "web": subprocess.Popen([*py, "runserver", options["addr"], "--noreload"]),
        }

    def _seed(self) -> None:
        from demo import jobs

        for n in range(3):
            jobs.flaky_report.enqueue(n)
        self.stdout.write("demo     3 flaky_report jobs enqueued; watch the worker's log")

    def _supervise(self, procs: dict[str, subprocess.Popen]) -> None:
        stopping = []
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, lambda *_: stopping.append(True))
        while not stopping:
            for name, p in procs.items():
                if p.poll() is not None:
                    self.stderr.write(f"{name} exited with {p.returncode}; stopping the rest")
                    stopping.append(True)
            time.sleep(0.2)
        for p in procs.values():
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in procs.values():
            try:
                p.wait(timeout=40)
            except subprocess.TimeoutExpired:
                p.kill()
