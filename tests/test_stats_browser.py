"""The statistics charts in a real Chromium: drawn by the server, kept live by the page's poll."""

from __future__ import annotations

import pytest

from tests import jobs
from tests.procs import wait_for
from tests.test_dashboard_browser import browser, follow, operator, page, shoot, worker  # noqa: F401 (fixtures)


@pytest.mark.slow
def test_a_queues_chart_follows_the_jobs_a_worker_runs_without_a_reload(page):  # noqa: F811
    page.goto("/admin/emq/dashboard/statistics/?queue=default")
    total = page.locator(".emq-statchart-total")
    assert total.inner_text().startswith("0 completed")
    jobs.add.enqueue_many([((i, i), {}) for i in range(30)])
    wait_for(lambda: total.inner_text().startswith("30 completed"), 25, what="the chart's next poll")
    bars = page.locator(".emq-statchart svg g")  # a bar a minute that settled jobs, each with its figures
    assert 1 <= bars.count() <= 2 and "completed" in bars.first.locator("title").text_content()
    shoot(page, "statistics-queue")
    page.reload()  # the job names' table is drawn with the page
    follow(page, "#emq-names >> text=tests.jobs.add")
    assert page.locator(".emq-statchart-total").inner_text().startswith("30 completed")
    shoot(page, "statistics-job-name")
