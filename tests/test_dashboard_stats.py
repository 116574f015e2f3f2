"""The dashboard's statistics: a queue's chart on the overview, the Statistics page (its job names, and one
name's chart) and the JSON its charts poll, behind the view permission."""

from __future__ import annotations

import pytest

from emq.core.engine import Queue
from emq.testing import run_until_empty
from tests import jobs
from tests.dashboard_fixtures import make_users, page_url, web_as


@pytest.fixture
def users(db):
    return make_users()


@pytest.fixture
def ran(emq_env):
    """A queue whose worker completed 6 add jobs and saw 2 fail_if_odd jobs fail twice (dead)."""
    jobs.add.using(queue="charts").enqueue_many([((i, 1), {}) for i in range(6)])
    jobs.fail_if_odd.using(queue="charts").enqueue_many([((1,), {}), ((3,), {})])
    run_until_empty(["charts"])
    Queue("charts").keep.roll_stats()  # the Pump's roll, for the week's chart


def test_the_overview_draws_the_selected_queues_chart(emq_env, users, ran):
    r = web_as(users["viewer"]).get(page_url("changelist", queue="charts"))
    body = r.content.decode()
    assert r.status_code == 200 and 'id="emq-queue-chart"' in body
    assert "<svg" in body and "6 completed, 4 failed (2 retried), 2 dead" in body
    assert page_url("chart", queue="charts", span="hour").replace("&", "&amp;") in body


def test_the_statistics_page_lists_the_job_names_with_their_last_hour(emq_env, users, ran):
    body = web_as(users["viewer"]).get(page_url("statistics", queue="charts")).content.decode()
    assert "tests.jobs.add" in body and "tests.jobs.fail_if_odd" in body
    assert page_url("statistics", queue="charts", name="tests.jobs.add").replace("&", "&amp;") in body
    one = web_as(users["viewer"]).get(page_url("statistics", queue="charts", name="tests.jobs.add", span="week"))
    assert one.status_code == 200 and "6 completed, 0 failed" in one.content.decode()


def test_the_chart_json_has_the_windows_and_the_svg_of_its_span(emq_env, users, ran):
    web = web_as(users["viewer"])
    hour = web.get(page_url("chart", queue="charts", name="tests.jobs.fail_if_odd")).json()
    assert hour["span"] == "hour" and len(hour["windows"]) == 60 and hour["svg"].startswith("<svg")
    assert (hour["total"]["failed"], hour["total"]["retried"], hour["total"]["dead"]) == (4, 2, 2)
    assert hour["total"]["run"]["p95"] is not None
    week = web.get(page_url("chart", queue="charts", span="week")).json()
    assert week["span"] == "week" and len(week["windows"]) == 7 * 144 and week["step_ms"] == 600_000


def test_the_statistics_need_the_view_permission(emq_env, users, ran):
    for name in ("statistics", "chart"):
        r = web_as(None).get(page_url(name, queue="charts"))
        assert r.status_code == 302 and "/admin/login/" in r["Location"]
        assert web_as(users["staff"]).get(page_url(name, queue="charts")).status_code == 403


def test_a_queue_without_statistics_draws_an_empty_chart(emq_env, users):
    r = web_as(users["viewer"]).get(page_url("statistics", queue="quiet"))
    assert r.status_code == 200 and "No job of this queue finished" in r.content.decode()
