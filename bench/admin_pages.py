"""How long each dashboard page takes to render with 100,000 jobs in one queue.

    python bench/admin_pages.py            # a private embedded Valkey, printed as ms per page

``measure(url)`` fills the server at ``url`` under a fresh key prefix (deleted after), renders
every page through Django's test client as a superuser, and returns the median ms per page.
The queue holds 100,000 jobs: 87,000 ready in 51 groups, 10,000 scheduled, 1,000 active,
1,000 completed, 1,000 dead with a traceback, and 1,000 reclaimed once by the sweep.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
QUEUE = "bench"
GROUPS = 50
REPEAT = 7  # renders per page after one warm-up; the median is reported
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def _django() -> None:
    """Set Django up with an in-memory test database, unless the caller already did."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "echd_project.settings")
    import django
    from django.apps import apps

    if not apps.ready:
        django.setup()
    from django.db import connection
    from django.test.utils import setup_test_environment

    if not connection.settings_dict["NAME"].startswith(("file:memorydb", ":memory:")) and "test" not in str(
        connection.settings_dict["NAME"]
    ):
        setup_test_environment()
        connection.creation.create_test_db(verbosity=0, serialize=False)


def _tenant(a: int, b: int) -> str:
    return f"tenant-{a % GROUPS}"


def fill(total: int = 100_000) -> dict[str, str]:
    """Put total jobs of every state in the bench queue; returns ids worth looking at."""
    from emq.core.engine import Queue

    add = _bench_job()
    q = Queue(QUEUE)
    stall = add.using(group="stall").enqueue_many([((i, i), {}) for i in range(1000)])
    q.extend_locks([(c.id, c.token) for c in q.bclaim(1000, "bench-worker-that-died")], 1)
    reclaimed, deadline = 0, time.monotonic() + 10
    while reclaimed < 1000 and time.monotonic() < deadline:  # the 1 ms leases lapse on the server clock
        reclaimed += len(q.sweep())
    ready = add.using(group=_tenant).enqueue_many([((i, i), {}) for i in range(total - 11_000)])
    later = [add.spec((i, i), {}, "+3600000", origin="repeat:nightly") for i in range(10_000)]
    q.mint(later)
    _finish(q)
    return {"job": ready[-1].id, "stalled": stall[0].id, "scheduled": later[0].id}


def _bench_job() -> Any:
    from emq.jobs import registry

    return registry.get("bench.admin_pages.add") or _register()


def _register() -> Any:
    import emq

    def add(a: int, b: int) -> int:
        return a + b

    add.__module__, add.__qualname__ = "bench.admin_pages", "add"
    return emq.job(queue=QUEUE)(add)


def _finish(q: Any) -> None:
    """Claim 3,000: complete 1,000, bury 1,000 with a traceback, keep 1,000 active."""
    from emq.core.records import Outcome

    trace = "RuntimeError: upstream timed out\nTraceback (most recent call last):\n" + "  File x.py, line 1\n" * 30
    claimed = q.bclaim(1000, "bench-worker") + q.bclaim(1000, "bench-worker") + q.bclaim(1000, "bench-worker")
    q.finish([Outcome(c.id, c.token, "completed", "42") for c in claimed[:1000]])
    q.finish([Outcome(c.id, c.token, "dead", trace) for c in claimed[1000:2000]])


def pages(ids: dict[str, str]) -> dict[str, str]:
    from django.urls import reverse

    base = reverse("admin:emq_dashboard_changelist")
    q = f"queue={QUEUE}"
    return {
        "overview": base,
        "lanes": f"{base}lanes/?{q}",
        "leases": f"{base}leases/?{q}",
        "stalled": f"{base}stalled/?{q}",
        "scheduled": f"{base}scheduled/?{q}",
        "scheduled, page 100": f"{base}scheduled/?{q}&pos=4950",
        "completed": f"{base}completed/?{q}",
        "dead": f"{base}dead/?{q}",
        "dead, filtered by name": f"{base}dead/?{q}&name=admin_pages",
        "scheduled, filtered (no match: whole scan budget)": f"{base}scheduled/?{q}&name=nomatch",
        "scheduled, by origin (recurrence link)": f"{base}scheduled/?{q}&origin=repeat:nightly",
        "job detail": f"{base}job/?{q}&id={ids['job']}",
        "find by id": f"{base}find/?id={ids['job']}",
    }


def measure(url: str) -> dict[str, float]:
    """Fill the server at url with 100,000 jobs (own prefix, removed after); median ms per page."""
    _django()
    from django.contrib.auth.models import User
    from django.test import Client

    from emq.core.engine import Queue
    from emq.testing import isolated

    user = User.objects.filter(username="bench-admin").first() or User.objects.create_superuser(
        "bench-admin", "bench@example.com", "bench-only"
    )
    web = Client()
    web.force_login(user)
    results: dict[str, float] = {}
    with isolated(url=url):
        ids = fill()
        c = Queue(QUEUE).counts()
        held = c.scheduled + c.ready + c.active + c.completed + c.dead
        if held != 100_000:
            raise RuntimeError(f"the bench queue holds {held:,} jobs, not 100,000: {c}")
        for name, path in pages(ids).items():
            status = web.get(path).status_code  # warm-up: templates compiled, scripts loaded
            if status not in (200, 302):
                raise RuntimeError(f"{name}: {path} answered {status}")
            times = []
            for _ in range(REPEAT):
                start = time.perf_counter()
                web.get(path)
                times.append((time.perf_counter() - start) * 1000)
            results[name] = round(statistics.median(times), 1)
    return results


def main() -> None:
    from emq.core import embedded

    folder = Path(tempfile.mkdtemp(prefix="emq-bench-admin-"))
    url = embedded.start(folder, persist=False)
    try:
        results = measure(url)
    finally:
        embedded.stop(folder)
    width = max(len(k) for k in results)
    print(f"dashboard pages with 100,000 jobs in one queue (median of {REPEAT} renders)")
    for name, ms in results.items():
        print(f"  {name:<{width}}  {ms:7.1f} ms")


if __name__ == "__main__":
    main()
