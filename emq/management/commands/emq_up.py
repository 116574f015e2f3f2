"""``manage.py emq_up``: everything for development in one command (what ``make run`` calls).

It checks the server first (an unreachable EMQ_URL is one line and exit 1, nothing started), then
starts a Pump, a worker and the web server, each in a process group of its own and set to die
with it, so a terminal's Ctrl-C reaches them only through here: the first stops them gracefully,
a second cuts the worker's grace short. A child that exits on its own (a web server whose port is
taken) stops the rest and makes this exit 1. The embedded Valkey it started stops with it; one it
found running keeps running, and it says so once, with how to stop it.

What a newcomer must read (the admin's address and password) comes last, once the worker, the
Pump and the web server are up, so their start-up lines do not push it off the screen; the demo
recurrence mints a job every 30 s, not every few seconds, so its lines do not either.
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from datetime import timedelta

from django.core.management.base import BaseCommand, CommandError

from emq.core import config, embedded
from emq.core.connection import data_dir, get_client, guard, mask
from emq.errors import EmqError

DEMO_RECURRENCE = "demo-add-every-30s"
EARLIER_DEMO_RECURRENCES = ("demo-add-every-3s",)  # its lines every 3 s buried the address: deleted
STOP_WAIT = 45.0  # seconds the children get to stop (the worker's grace is 30 s) before they are killed
READY_WAIT = 30.0  # seconds the children get to come up before the address is said anyway
DEMO_REPORTS = 6
log = logging.getLogger("emq.up")


class Command(BaseCommand):
    help = (
        "Start everything for development and stop it all together on Ctrl-C: the embedded Valkey "
        "(unless EMQ_URL is set), a Pump, a worker and the web server with the admin; creates a demo "
        "superuser (printing its credentials once all is up) and a demo recurrence whose jobs complete every 30 s."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("--addr", default="127.0.0.1:8000", help="address of the web server")
        parser.add_argument("--concurrency", type=int, default=4, help="worker threads")

    def handle(self, *args, **options) -> None:
        from emq.runtime import logs

        try:
            logs.setup()
            url, started = self._server()
        except EmqError as exc:
            raise CommandError(str(exc)) from None
        children, failed = Children(), None
        children.listen()  # from here on a signal stops what has started, however far it got
        try:
            log.info("valkey   %s  (data in %s)", mask(url), data_dir())
            user, password = self._demo_user()
            self._demo_recurrence()
            children.start(options)
            children.wait_ready(options["addr"])
            self._seed()
            _say_where(options["addr"], user, password)
            failed = children.supervise()
        except EmqError as exc:
            failed = str(exc)
        finally:
            children.stop()
            self._leave_server(started)
        if failed:
            raise CommandError(failed)

    def _server(self) -> tuple[str, bool]:
        """The server's URL, checked to answer; whether this command started it (the embedded one)."""
        if config.get("EMQ_URL"):
            with guard():
                get_client().ping()
            return config.get("EMQ_URL"), False
        before = embedded.running(data_dir())
        return embedded.start(data_dir()), before is None

    def _leave_server(self, started: bool) -> None:
        if config.get("EMQ_URL"):
            return
        if started:
            embedded.stop(data_dir())
            log.info("stopped the embedded Valkey in %s", data_dir())
        else:
            log.info("the embedded Valkey in %s was running before emq_up and keeps running; "
                     "stop it with: python manage.py emq server stop", data_dir())

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
        from emq.jobs import autodiscover
        from emq.models import Recurrence

        autodiscover()
        Recurrence.objects.filter(name__in=EARLIER_DEMO_RECURRENCES).delete()
        row = Recurrence.objects.filter(name=DEMO_RECURRENCE).first() or Recurrence(name=DEMO_RECURRENCE)
        row.job, row.every, row.cron, row.args, row.enabled = "demo.jobs.add", timedelta(seconds=30), "", [2, 3], True
        row.full_clean()
        row.save()
        log.info("repeat   %r: demo.jobs.add(2, 3) minted every 30 s (edit it in the admin)", DEMO_RECURRENCE)

    def _seed(self) -> None:
        from demo import jobs

        refs = jobs.flaky_report.enqueue_many([((n,), {}) for n in range(DEMO_REPORTS)])
        log.info("demo     %s flaky_report jobs enqueued: 1 in 3 fails its first attempt and is retried", DEMO_REPORTS)
        deadline = time.monotonic() + READY_WAIT
        with contextlib.suppress(TimeoutError):  # their lines come before the address, not over it
            for ref in refs:
                ref.wait(timeout=max(deadline - time.monotonic(), 0.1))


def _say_where(addr: str, user: str, password: str) -> None:
    """The lines a newcomer needs, framed, after everything else has started talking."""
    rule = "-" * 72
    for line in (rule, f"admin      http://{addr}/admin/   user {user!r}   password {password!r}",
                 f"dashboard  http://{addr}/admin/emq/dashboard/", "Ctrl-C stops everything.", rule):
        log.info(line)


def _spawn(argv: list[str]) -> subprocess.Popen:
    """A child in its own process group (a terminal's Ctrl-C is not sent to it) that dies with this process."""
    from emq.runtime.supervisor import die_with_parent

    return subprocess.Popen(argv, process_group=0, preexec_fn=die_with_parent, env=os.environ.copy())


class Children:
    """The started processes: watched until one exits or a signal asks to stop; then stopped together."""

    def __init__(self) -> None:
        self.procs: dict[str, subprocess.Popen] = {}
        self.signals = 0

    def start(self, options: dict) -> None:
        py = [sys.executable, "manage.py"]
        # --no-supervise: this command watches its children itself, and one that exits stops them all.
        worker = [*py, "emq_worker", "--no-pump", "--no-supervise", "--concurrency", str(options["concurrency"])]
        web = [*py, "runserver", options["addr"], "--noreload"]
        for name, argv in (("pump", [*py, "emq_pump"]), ("worker", worker), ("web", web)):
            self.procs[name] = _spawn(argv)

    def wait_ready(self, addr: str, timeout: float = READY_WAIT) -> None:
        """Until the worker has registered, the Pump leads the default queue and the web server listens
        (or one exited: ``supervise`` says so, or timeout passed)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and not any(p.poll() is not None for p in self.procs.values()):
            if self._ready(addr):
                return
            time.sleep(0.1)

    def _ready(self, addr: str) -> bool:
        from emq.core.engine import snapshots
        from emq.core.logical import partitions
        from emq.core.registry import workers
        from emq.runtime.pump import lead_ttl_ms

        worker = f":{self.procs['worker'].pid}:"
        if not any(worker in w.id for w in workers()):
            return False
        first = partitions([config.get("EMQ_DEFAULT_QUEUE")])[0]  # a partitioned queue's first partition
        if not snapshots([first], lead_ttl_ms())[0].leader:
            return False
        host, _, port = addr.rpartition(":")
        with socket.socket() as s:
            return s.connect_ex((host or "127.0.0.1", int(port))) == 0

    def listen(self) -> None:
        """Count SIGINT and SIGTERM instead of dying: the first stops everything, a second hurries the worker."""
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, self._on_signal)

    def supervise(self) -> str | None:
        """Wait until Ctrl-C/SIGTERM (None) or until a child exits on its own (what happened)."""
        while not self.signals:
            for name, p in self.procs.items():
                if p.poll() is not None:
                    return f"{name} exited with code {p.returncode}; stopped the rest"
            time.sleep(0.2)
        return None

    def _on_signal(self, *_: object) -> None:
        self.signals += 1
        if self.signals > 1:  # a second Ctrl-C: the worker releases its jobs now
            self._send(signal.SIGTERM)

    def stop(self) -> None:
        """SIGTERM each child once, wait up to STOP_WAIT (a second Ctrl-C hurries the worker), then kill."""
        self._send(signal.SIGTERM)
        deadline = time.monotonic() + STOP_WAIT
        for p in self.procs.values():
            try:
                p.wait(timeout=max(deadline - time.monotonic(), 0.1))
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()

    def _send(self, sig: int) -> None:
        for p in self.procs.values():
            if p.poll() is None:
                p.send_signal(sig)
