"""The demo's views enqueue through ``@emq.job`` and through Django's ``@task`` and answer at once."""

from __future__ import annotations

from django.test import Client

import emq
from emq.testing import run_until_empty


def test_views_enqueue_a_job_and_a_task_then_read_the_result(emq_env):
    web = Client()
    job = web.post("/demo/add/", {"a": 4, "b": 5})
    task = web.post("/demo/words/", {"text": "jobs supersede cron and queues"})
    assert (job.status_code, task.status_code) == (202, 202)
    assert emq.get_job(job.json()["job"]).state == "ready"
    status = f"/demo/words/{task.json()['task']}/"
    assert web.get(status).json()["status"] == "READY"
    run_until_empty()
    assert emq.get_job(job.json()["job"]).result == 9
    assert web.get(status).json() == {"task": task.json()["task"], "status": "SUCCESSFUL", "attempts": 1, "value": 5}
    assert web.get("/demo/words/nope/").status_code == 404


def test_one_flaky_report_in_three_is_retried_then_completes(emq_env):
    """The demo shows a retry every time it runs, not by luck: reports 0 and 3 of 6 fail once."""
    from demo import jobs

    refs = jobs.flaky_report.enqueue_many([((n,), {}) for n in range(6)])
    run_until_empty()
    assert [(r.get().state, r.get().attempts) for r in refs] == [("completed", 2), *[("completed", 1)] * 2] * 2


def test_the_home_page_points_a_newcomer_to_the_admin():
    from django.test import Client

    r = Client().get("/")
    assert r.status_code == 200 and b'href="/admin/"' in r.content
