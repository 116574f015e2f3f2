"""The job dashboard in a real headless Chromium (Debian's), driven by Playwright, with a live worker.

Skipped, saying why, when Playwright or Chromium is missing; ``.ci/run`` installs Chromium.
Screenshots of every page, light and dark, go to ``test-output/screenshots/``.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import threading
from pathlib import Path

import pytest
from django.db import connections
from django.db.backends.sqlite3.base import DatabaseWrapper

import emq
from emq.core.engine import Queue
from emq.dashboard import queries
from emq.runtime.worker import Worker
from tests import dashboard_jobs, jobs
from tests.dashboard_fixtures import PASSWORD, make_users
from tests.procs import wait_for

ROOT = Path(__file__).resolve().parent.parent
SHOTS = ROOT / "test-output" / "screenshots"
CHROMIUM = os.environ.get("EMQ_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]
VIEWPORT = {"width": 1366, "height": 768}  # a laptop screen

sync_api = pytest.importorskip(
    "playwright.sync_api", reason="Playwright is not installed: pip install -r requirements-dev.txt"
)
if not os.path.exists(CHROMIUM):
    pytest.skip(
        f"No Chromium found at {CHROMIUM}: install Debian's chromium (apt-get install chromium) "
        "or set EMQ_CHROMIUM to run the dashboard's browser tests",
        allow_module_level=True,
    )


def follow(page, selector: str) -> None:
    """Click a link or a form's button and wait for the page it leads to. A click returns once the navigation
    starts: a count taken right after reads the old page, or a page not yet parsed (zero rows)."""
    with page.expect_navigation():
        page.click(selector)


@pytest.fixture(scope="module")
def browser(live_server):
    # Playwright's sync API keeps an event loop on this thread; the ORM calls the tests and
    # their database teardown make here are plain synchronous code all the same.
    old = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    try:
        with closing_sqlite_connections(live_server), sync_api.sync_playwright() as pw:
            b = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
            yield b
            b.close()
    finally:
        if old is None:
            os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
        else:
            os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = old


@contextlib.contextmanager
def closing_sqlite_connections(server):
    """Close the SQLite connections the live server's request threads opened and left open.

    Django never closes a connection to an in-memory test database (that would drop the data),
    so finished request threads leave some to the garbage collector; Python 3.13 warns about
    each, which ``filterwarnings = error`` turns into a failure at some later test.
    """
    opened: list = []
    original = DatabaseWrapper.get_new_connection

    def tracked(self, conn_params):
        conn = original(self, conn_params)
        opened.append((threading.current_thread(), conn))
        return conn

    DatabaseWrapper.get_new_connection = tracked
    try:
        yield
    finally:
        DatabaseWrapper.get_new_connection = original
        wrappers = [*connections.all(), *server.thread.connections_override.values()]
        in_use = {id(w.connection) for w in wrappers}
        for thread, conn in opened:
            if thread is not threading.main_thread() and not thread.is_alive() and id(conn) not in in_use:
                conn.close()


@pytest.fixture
def worker(emq_env):
    """A real worker (with its Pump) serving "default" on a thread of this process."""
    w = Worker(["default"], concurrency=4, grace=0, park_timeout=0.5)
    t = threading.Thread(target=w.run, name="emq-test-worker", daemon=True)
    t.start()
    yield w
    w.stop()
    t.join(timeout=10)


@pytest.fixture
def operator(transactional_db):
    return make_users()["operator"]


@pytest.fixture
def page(browser, live_server, operator, worker):
    """A logged-in page on a laptop-sized viewport."""
    with logged_in(browser, live_server, operator) as p:
        yield p


@contextlib.contextmanager
def logged_in(browser, live_server, user, timeout_ms: int | None = None):
    """A page of a browser context of its own, logged in as user on the dashboard; closed after."""
    context = browser.new_context(viewport=VIEWPORT, base_url=live_server.url)
    try:
        p = context.new_page()
        if timeout_ms:
            p.set_default_timeout(timeout_ms)
        p.goto("/admin/login/?next=/admin/emq/dashboard/")
        p.fill("#id_username", user.username)
        p.fill("#id_password", PASSWORD)
        follow(p, "input[type=submit]")
        p.wait_for_url("**/admin/emq/dashboard/")
        yield p
    finally:
        context.close()


def shoot(page, name: str) -> None:
    """Save the page as it is now, in the light and the dark colour scheme."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        page.screenshot(path=str(SHOTS / f"{name}-{scheme}.png"), full_page=True)
    page.emulate_media(color_scheme="light")


def counts():
    return Queue("default").counts()


def test_every_page_shows_live_data_from_a_running_worker(browser, page, worker, tmp_path):
    """Log in, let a worker complete, fail and hold jobs, then open each page and see them."""
    jobs.add.enqueue_many([((i, i), {}) for i in range(20)])
    dead = dashboard_jobs.needs_file.enqueue(str(tmp_path / "never"))
    jobs.sleep_for.using(group="slow").enqueue(10)  # still running when the leases page is opened
    jobs.add.enqueue_in(3600, 1, 1)
    wait_for(lambda: counts().completed >= 20 and counts().dead >= 1 and counts().active >= 1, 20, what="the worker")
    # A queue no worker serves, whose jobs were claimed by a worker that then died: the sweep takes them back.
    jobs.add.using(queue="limbo", max_stalled=0).enqueue(1, 1)
    jobs.add.using(queue="limbo").enqueue(2, 2)
    limbo = Queue("limbo")
    limbo.extend_locks([(c.id, c.token) for c in limbo.bclaim(2, "worker-that-died")], 200)
    for group in ("tenant-a", "tenant-b", "tenant-c"):  # ready work on the ring, one group at its cap
        jobs.add.using(queue="limbo", group=group).enqueue_many([((1, 1), {})] * 3)
    limbo.set_group_limit("tenant-b", 1)
    limbo.bclaim(3, "worker-that-died")
    lapsed = lambda: limbo.client.zrangebyscore(limbo.keys.leases, "-inf", queries.server_now(limbo.client))  # noqa: E731
    wait_for(lambda: len(lapsed()) == 2, 5, what="both leases to lapse")

    page.goto("/admin/emq/dashboard/")
    assert page.locator("#emq-queues tbody tr", has_text="default").count() == 1
    assert page.locator("#emq-workers", has_text=worker.id).count() == 1
    assert page.locator(".emq-chart .emq-col").count() == 60
    shoot(page, "overview")
    page.goto("/admin/emq/dashboard/lanes/?queue=limbo")
    assert page.locator(".emq-table").first.locator("tbody tr").count() == 2  # tenant-b is off the ring
    assert page.locator("tr.emq-capped", has_text="tenant-b").count() == 1
    shoot(page, "lanes")
    page.goto("/admin/emq/dashboard/leases/?queue=limbo")
    assert page.locator("#emq-leases tr.emq-stalled").count() == 2
    shoot(page, "leases-stalled-candidates")
    page.goto("/admin/emq/dashboard/stalled/?queue=limbo")
    follow(page, "text=Sweep now")
    assert page.locator(".messagelist", has_text="Swept queue limbo: reclaimed 2 expired leases.").count() == 1
    assert page.locator("#emq-stalled tr", has_text="worker-that-died").count() == 2
    assert page.locator("#emq-stalled", has_text="dead as stalled").count() == 1
    shoot(page, "stalled")
    for tab, selector, text in [
        ("leases", "#emq-leases", "tests.jobs.sleep_for"),
        ("scheduled", "#emq-scheduled", "tests.jobs.add"),
        ("completed", "#emq-completed", "tests.jobs.add"),
        ("dead", "#emq-dead", "does not exist yet"),
    ]:
        page.goto(f"/admin/emq/dashboard/{tab}/?queue=default")
        assert page.locator(selector, has_text=text).count() >= 1, tab
        shoot(page, tab)
    page.goto(f"/admin/emq/dashboard/job/?queue=default&id={dead.id}")
    assert page.locator("#emq-job-state").inner_text() == "dead"
    shoot(page, "job")


def test_retry_a_dead_job_and_watch_it_complete(browser, page, worker, tmp_path):
    path = tmp_path / "appears-later"
    ref = dashboard_jobs.needs_file.enqueue(str(path))
    wait_for(lambda: Queue("default").get_job(ref.id).state == "dead", 10, what="the job to die")
    page.goto("/admin/emq/dashboard/dead/?queue=default")
    page.check(f"input[name=ids][value='{ref.id}']")
    path.write_text("now it exists")
    follow(page, "text=Retry selected")
    assert page.locator(".messagelist", has_text="Retried 1 dead job of queue default").count() == 1
    page.goto(f"/admin/emq/dashboard/job/?queue=default&id={ref.id}")

    def completed():
        page.reload()
        return page.locator("#emq-job-state").inner_text() == "completed"

    wait_for(completed, 15, every=0.2, what="the retried job to complete")
    assert page.locator("#emq-attempts", has_text="does not exist yet").count() == 1
    shoot(page, "job-retried")


def test_release_a_lease(browser, page, worker):
    ref = jobs.sleep_for.enqueue(4)
    wait_for(lambda: Queue("default").get_job(ref.id).state == "active", 10, what="the worker to claim the job")
    page.goto("/admin/emq/dashboard/leases/?queue=default")
    row = page.locator("#emq-leases tbody tr", has_text=ref.id[:20])
    assert row.locator("time.emq-countdown").inner_text().startswith("in ")
    row.locator("text=Give back lease…").click()
    page.wait_for_selector("text=Are you sure?")
    shoot(page, "release-confirm")
    follow(page, "input[value='Yes, I’m sure']")
    assert page.locator(".messagelist", has_text=f"Released job {ref.id} (attempt 1)").count() == 1
    # The worker claims the released job again under a new token; the first run's outcome is stale.
    wait_for(lambda: Queue("default").get_job(ref.id).attempts == 2, 10, what="the job to be claimed again")


def test_cancel_a_running_job_and_pause_a_queue(browser, page, worker, tmp_path):
    """Cancel from its lease row (the worker stops it), then pause and resume the queue on the Lanes page."""
    notes = tmp_path / "notes"
    ref = jobs.until_cancelled.enqueue(str(notes))
    wait_for(lambda: Queue("default").get_job(ref.id).state == "active", 10, what="the worker to claim the job")
    page.goto("/admin/emq/dashboard/leases/?queue=default")
    row = page.locator("#emq-leases tbody tr", has_text=ref.id[:20])
    row.locator("text=Cancel…").click()
    page.wait_for_selector("text=Are you sure?")
    shoot(page, "cancel-confirm")
    follow(page, "input[value='Yes, I’m sure']")
    assert page.locator(".messagelist", has_text=f"Cancelled 1 job of queue default: {ref.id}").count() == 1
    wait_for(lambda: notes.exists() and "Cancelled cancelled=True" in notes.read_text(), 10, what="the job stopped")
    page.goto("/admin/emq/dashboard/lanes/?queue=default")
    follow(page, "text=Pause queue")
    assert page.locator("#emq-queue-state", has_text="Queue default is paused").count() == 1
    shoot(page, "lanes-paused")
    follow(page, "text=Resume queue")
    assert page.locator("#emq-queue-state", has_text="Queue default is running").count() == 1


# The colours of each badge as the browser computed them, with the first opaque background behind it.
BADGE_COLOURS = """el => {
  const fg = getComputedStyle(el).color;
  let node = el, bg = 'rgba(0, 0, 0, 0)';
  while (node && node.nodeType === 1) {
    const c = getComputedStyle(node).backgroundColor;
    if (!/rgba\\(.*, 0\\)$/.test(c) && c !== 'transparent') { bg = c; break; }
    node = node.parentElement;
  }
  return [fg, bg];
}"""


def contrast(fg: str, bg: str) -> float:
    """WCAG 2's contrast ratio of two computed colours ("rgb(r, g, b)" or "rgba(r, g, b, a)", fg over bg)."""
    def channels(css: str) -> list[float]:
        return [float(x) for x in re.findall(r"[\d.]+", css)]

    def luminance(rgb: list[float]) -> float:
        lin = [c / 255 / 12.92 if c / 255 <= 0.04045 else ((c / 255 + 0.055) / 1.055) ** 2.4 for c in rgb[:3]]
        return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]

    f, b = channels(fg), channels(bg)
    if len(f) == 4:  # a translucent text colour: blend it over its background as the browser paints it
        f = [f[3] * fc + (1 - f[3]) * bc for fc, bc in zip(f[:3], b[:3], strict=True)]
    lighter, darker = sorted([luminance(f), luminance(b)], reverse=True)
    return (lighter + 0.05) / (darker + 0.05)


def jobs_in_every_state(worker, tmp_path) -> dict[str, tuple[str, str]]:
    """{state: (queue, id)}: a job in each of the states a badge shows."""
    active = jobs.add.using(queue="badges").enqueue(1, 1)
    Queue("badges").bclaim(1, "a-worker-far-away")
    scheduled = jobs.add.using(queue="badges").enqueue_in(3600, 1, 1)
    waiting = jobs.add.using(queue="badges", after=[scheduled]).enqueue(1, 1)
    ready = jobs.add.using(queue="badges").enqueue(1, 1)
    cancelled = jobs.add.using(queue="badges").enqueue_in(3600, 2, 2)
    Queue("badges").cancel([cancelled.id])
    completed = jobs.add.enqueue(1, 1)
    dead = dashboard_jobs.needs_file.enqueue(str(tmp_path / "never"))
    wait_for(lambda: Queue("default").get_job(dead.id).state == "dead", 20, what="the worker")
    refs = {"active": active, "scheduled": scheduled, "waiting": waiting, "ready": ready, "cancelled": cancelled,
            "completed": completed, "dead": dead}
    for state, ref in refs.items():
        assert emq.get_job(ref.id, queue=ref.queue).state == state
    return {state: (ref.queue, ref.id) for state, ref in refs.items()}


def test_every_state_badge_is_readable_in_both_themes(browser, page, worker, tmp_path):
    """The job page's state badge has a contrast ratio of at least 4.5 (WCAG AA) in every state, light and dark."""
    low = []
    for state, (queue, job_id) in jobs_in_every_state(worker, tmp_path).items():
        page.goto(f"/admin/emq/dashboard/job/?queue={queue}&id={job_id}")
        badge = page.locator("#emq-job-state")
        assert badge.inner_text() == state
        for scheme in ("light", "dark"):
            page.emulate_media(color_scheme=scheme)
            fg, bg = badge.evaluate(BADGE_COLOURS)
            ratio = contrast(fg, bg)
            if ratio < 4.5:
                low.append(f"{state} in {scheme}: {fg} on {bg} = {ratio:.2f}")
        page.emulate_media(color_scheme="light")
    assert not low, low
