"""The console in a real headless Chromium: filter the dead letter by error class and argument text, select
every job that matches, retry them all in steps under a progress bar; cancel 50,000 scheduled jobs at once.

Uses ``test_dashboard_browser``'s browser (skipped, saying why, without Playwright or Chromium). No worker
runs here: retried jobs stay ready, so what the page reports is what the actions did.
"""

from __future__ import annotations

import pytest

from emq.core.engine import Queue
from tests import console_data, jobs
from tests.test_dashboard_browser import browser, follow, logged_in, operator, shoot  # noqa: F401  (fixtures)

MATCHING = 5000


@pytest.fixture
def page(browser, live_server, operator, emq_env):  # noqa: F811
    with logged_in(browser, live_server, operator, timeout_ms=60_000) as p:
        yield p


def test_filter_the_dead_letter_select_all_that_match_and_retry_them(page):
    """5,000 dead ValueErrors about a card among 6,000 dead jobs: filtered by class and arguments, selected
    whole ("Select all matching" counts them), retried in steps; the page says 5,000 and none is left."""
    def error(i: int) -> str:  # 0..499: another class; 500..999: no card; the 5,000 newest: the ones to retry
        return "KeyError: card" if i < 500 else "ValueError: declined"

    args = [(i, f"cash-{i}" if 500 <= i < 1000 else f"card-{i}") for i in range(6000)]
    console_data.finished("default", args, "dead", fn=jobs.touch, error=error)
    page.goto("/admin/emq/dashboard/dead/?queue=default")
    assert page.locator("#emq-classes tbody tr", has_text="ValueError").inner_text().split("\t")[1] == "5,500"
    page.fill("input[name=error]", "ValueError")
    page.fill("input[name=match]", "card")
    follow(page, ".emq-filters input[type=submit]")
    assert page.locator("#emq-dead tbody tr").count() == 50
    assert page.locator("#emq-scanned", has_text="found 50").count() == 1
    page.check("input.emq-all")
    page.click("#emq-select-matching")
    page.wait_for_selector(f"#emq-bulk-what:has-text('All {MATCHING:,} matching jobs selected')")
    shoot(page, "dead-all-matching-selected")
    page.click("text=Retry selected")
    page.wait_for_selector(f"#emq-bulk-status:has-text('Retry all {MATCHING:,} matching jobs?')")
    page.click("#emq-bulk-yes")
    page.wait_for_selector(".messagelist")
    report = page.locator(".messagelist").inner_text()
    assert f"Retried {MATCHING:,} of {MATCHING:,} matching dead jobs of queue default." in report
    assert page.locator("#emq-dead tbody tr", has_text="No dead job matches").count() == 1
    shoot(page, "dead-retried-all")
    q = Queue("default")
    assert q.size("dead") == 1000 and q.counts().ready == MATCHING


@pytest.mark.slow
def test_cancel_all_50000_matching_scheduled_jobs(page):
    """A 50,000-job action: a step a request (1,000 jobs each), under a progress bar, then its count."""
    console_data.mint("default", [(i, i) for i in range(50_000)], due="+3600000")
    console_data.mint("default", [("/dev/null",)] * 10, due="+3600000", fn=jobs.touch)
    page.goto("/admin/emq/dashboard/scheduled/?queue=default&name=jobs.add")
    page.click("button[data-bulk=cancel]")
    page.wait_for_selector("#emq-bulk-status:has-text('Cancel every matching job?')")
    page.click("#emq-bulk-yes")
    page.wait_for_selector("#emq-bulk-progress")
    page.wait_for_selector(".messagelist", timeout=300_000)
    report = page.locator(".messagelist").inner_text()
    assert "Cancelled 50,000 of 50,000 matching scheduled jobs of queue default." in report
    q = Queue("default")
    assert q.size("scheduled") == 10 and q.counts().cancelled == 50_000
