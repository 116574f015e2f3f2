"""The dashboard as an operations console, through Django's test client: filters on every list, pages by
cursor, acting on every job that matches (the steps the page's script drives, and without a script), the
dead letter by error class, a job name's page, each queue's latency and workers, readable job fields."""

from __future__ import annotations

import json

import pytest

from emq.core.engine import Queue
from emq.core.records import Outcome
from tests import console_data, jobs
from tests.dashboard_fixtures import make_users, page_url, web_as

LISTS = ["ready", "leases", "stalled", "waiting", "scheduled", "completed", "dead", "cancelled"]
BULK = "/admin/emq/dashboard/bulk/"


@pytest.fixture
def users(db):
    return make_users()


def dead_orders(n: int, queue: str = "default") -> list[str]:
    """n dead jobs: the even ones ValueError with "card" in their arguments, the odd ones KeyError."""
    return console_data.finished(queue, [(i, f"card-{i}" if i % 2 == 0 else f"cash-{i}") for i in range(n)], "dead",
                                 error=lambda i: "ValueError: declined\nTraceback …" if i % 2 == 0 else "KeyError: x",
                                 fn=jobs.touch)


def steps(web, **form) -> dict:
    """Every step of an action, as the page's script runs them; the last step's answer."""
    cursor, totals, answer = "", {"read": 0, "matched": 0, "changed": 0}, {}
    while True:
        body = {**form, "cursor": cursor, **{f"t_{k}": v for k, v in totals.items()}}
        r = web.post(BULK, body, HTTP_ACCEPT="application/json")
        assert r.status_code == 200, r.content
        answer = r.json()
        totals = answer["totals"]
        if answer["done"]:
            return answer
        cursor = answer["cursor"]


def test_every_list_takes_every_filter_and_says_what_it_read(emq_env, users):
    dead_orders(10)
    web = web_as(users["viewer"])
    query = {"queue": "default", "name": "touch", "group": "_", "origin": "", "error": "ValueError", "match": "CARD",
             "since": "2000-01-01T00:00", "until": "2999-01-01T00:00:30"}
    for name in LISTS:
        r = web.get(page_url(name, **query))
        assert r.status_code == 200, name
        assert r.context["slice"].filtered, name
    r = web.get(page_url("dead", **query))
    assert len(r.context["rows"]) == 5 and 'id="emq-scanned"' in r.content.decode()
    assert "read 10 of 10 entries in the time range" in r.content.decode()
    r = web.get(page_url("dead", queue="default", since="yesterday"))
    assert r.status_code == 200 and len(r.context["rows"]) == 10
    assert "ince &#x27;yesterday&#x27; is not an ISO 8601 date" in r.content.decode()


def test_a_filtered_list_pages_by_cursor(emq_env, users):
    dead_orders(240)
    web = web_as(users["viewer"])
    r = web.get(page_url("dead", queue="default", error="ValueError"))
    seen = [row.id for row in r.context["rows"]]
    while r.context["next_url"]:
        r = web.get(r.context["next_url"])
        seen += [row.id for row in r.context["rows"]]
    assert len(seen) == len(set(seen)) == 120


def test_masked_arguments_never_match_a_search(emq_env, users):
    """A viewer cannot find out what a masked value holds by searching for it."""
    ref = jobs.always_fails.using(max_attempts=1).enqueue(reason={"password": "hunter2", "user": "ada"})
    q = Queue("default")
    (c,) = q.bclaim(1, "w")
    q.finish([Outcome(c.id, c.token, "dead", "RuntimeError: no")])
    web = web_as(users["viewer"])
    assert web.get(page_url("dead", queue="default", match="hunter2")).context["rows"] == []
    assert [r.id for r in web.get(page_url("dead", queue="default", match="ADA")).context["rows"]] == [ref.id]


def test_acting_on_all_that_match_runs_in_steps_and_says_how_many_changed(emq_env, users):
    """Retry every dead ValueError with "card" in its arguments: 2,500 of 5,000 dead jobs, a step a request."""
    dead_orders(5000)
    operator, viewer = web_as(users["operator"]), web_as(users["viewer"])
    form = {"queue": "default", "list": "dead", "error": "ValueError", "match": "card"}
    counted = steps(viewer, **form, op="count")
    assert counted["totals"]["matched"] == 2500 and Queue("default").size("dead") == 5000
    assert viewer.post(BULK, {**form, "op": "retry"}, HTTP_ACCEPT="application/json").status_code == 403
    done = steps(operator, **form, op="retry")
    assert (done["totals"]["matched"], done["totals"]["changed"]) == (2500, 2500) and done["left"] == {}
    assert Queue("default").size("dead") == 2500 and Queue("default").counts().ready == 2500
    page = operator.get(page_url("dead", queue="default")).content.decode()
    assert "Retried 2,500 of 2,500 matching dead jobs of queue default." in page
    assert steps(operator, **form, op="count")["totals"]["matched"] == 0


def test_a_bad_step_is_refused_with_a_reason(emq_env, users):
    web = web_as(users["operator"])
    r = web.post(BULK, {"queue": "default", "list": "completed", "op": "retry"}, HTTP_ACCEPT="application/json")
    assert r.status_code == 400 and "retry takes dead jobs" in r.json()["detail"]
    r = web.post(BULK, {"queue": "default", "list": "dead", "op": "move"}, HTTP_ACCEPT="application/json")
    assert r.status_code == 400 and "move needs a target queue" in r.json()["detail"]
    assert web.get(BULK).status_code == 405
    r = web.post(BULK, {"queue": "default", "list": "dead", "op": "count", "cursor": "x|y"},
                 HTTP_ACCEPT="application/json")
    assert r.status_code == 400 and "not a cursor" in r.json()["detail"]
    r = web.get(page_url("dead", queue="default", error="X", after="nonsense"))
    assert r.status_code == 200 and "ot a cursor of a list of jobs" in r.content.decode()


def test_without_a_script_the_form_confirms_then_acts(emq_env, users):
    console_data.mint("default", [(i, i) for i in range(30)], due="+3600000")
    web = web_as(users["operator"])
    form = {"queue": "default", "list": "scheduled", "op": "cancel", "next": page_url("scheduled", queue="default")}
    r = web.post(BULK, form)
    assert r.status_code == 200 and "Are you sure?" in r.content.decode()
    r = web.post(BULK, {**form, "confirmed": "1"}, follow=True)
    assert "Cancelled 30 of 30 matching scheduled jobs of queue default." in r.content.decode()
    assert Queue("default").counts().cancelled == 30


def test_move_all_that_match_to_another_queue(emq_env, users):
    dead_orders(20)
    jobs.add.using(queue="other").enqueue(1, 1)
    web = web_as(users["operator"])
    done = steps(web, queue="default", list="dead", error="KeyError", op="move", target="other")
    assert done["totals"]["changed"] == 10
    assert Queue("other").counts().ready == 11 and Queue("default").size("dead") == 10


def test_the_dead_letter_groups_its_jobs_by_error_class(emq_env, users):
    dead_orders(7)
    r = web_as(users["viewer"]).get(page_url("dead", queue="default"))
    assert [(c.name, c.count) for c in r.context["classes"]] == [("ValueError", 4), ("KeyError", 3)]
    html = r.content.decode()
    assert "7 of 7 dead jobs counted" in html and "?queue=default&amp;error=ValueError" in html


def test_a_job_names_page_shows_its_options_runs_and_failures(emq_env, users):
    console_data.finished("default", [(i,) for i in range(3)], "dead", error=lambda i: "ValueError: odd",
                          fn=jobs.fail_if_odd)
    console_data.finished("default", [(0,), (2,)], "completed", fn=jobs.fail_if_odd)
    r = web_as(users["viewer"]).get(page_url("name", fn="tests.jobs.fail_if_odd"))
    data, html = r.context["data"], r.content.decode()
    assert dict(data.options)["attempts"] == "at most 2"
    assert "0.01 s doubling to 0.02 s" in dict(data.options)["retry wait"]
    assert dict(data.options)["time limit"] == "1 h"
    assert [state for state, _ in data.runs].count("dead") == 3 and len(data.runs) == 5
    assert data.failures[0][:2] == ("ValueError", 3) and "none in queue default" in html


def test_the_overview_shows_latency_and_queues_no_worker_serves(emq_env, users):
    """Finding 6 of #32: ready jobs that wait with no worker read as waiting, never as "on time"."""
    jobs.add.using(queue="lonely").enqueue(1, 1)
    r = web_as(users["viewer"]).get(page_url("changelist"))
    row = next(row for row in r.context["data"].queues if row.name == "lonely")
    assert row.latency_ms is not None and row.workers == 0 and row.unserved
    assert "No worker serves this queue:</span> lonely" in r.content.decode()


def test_the_job_page_shows_stored_codes_as_a_user_reads_them(emq_env, users):
    """Finding 9 of #32: backoff, time limit, group and times in words, the stored value on hover."""
    ref = jobs.add.enqueue(1, 2)
    html = web_as(users["viewer"]).get(page_url("job", queue="default", id=ref.id)).content.decode()
    assert "1 s doubling to 5 min" in html and 'title="stored as 1,300"' in html
    assert ">1 h<" in html and 'title="stored as 3600000,0"' in html
    assert '<th scope="row">group</th><td>\n        <span title="stored as _">—</span>' in html
    assert " UTC <span class=\"emq-muted\">(" in html and " ms</span>" not in html


def test_lists_show_run_time_and_progress(emq_env, users):
    q = Queue("default")
    jobs.add.enqueue(1, 1)
    (c,) = q.bclaim(1, "w")
    q.live.renew([(c.id, c.token)], 30000, [(c.id, c.token, 0.4, "rows")])
    html = web_as(users["viewer"]).get(page_url("leases", queue="default")).content.decode()
    assert "Running for" in html and 'value="40"' in html
    q.finish([Outcome(c.id, c.token, "completed", "null")])
    r = web_as(users["viewer"]).get(page_url("completed", queue="default"))
    assert "Run time" in r.content.decode()
    assert json.dumps(r.context["rows"][0].fields["claimed"]) is not None
