"""The dashboard's flow pages: jobs waiting for parents, batches and chains with their progress and
callbacks, a job's workflow links and progress bar, and the live feed of events."""

from __future__ import annotations

import pytest
from django.test import Client

import emq
from emq.core.engine import Queue
from emq.core.records import Outcome
from tests import jobs
from tests.dashboard_fixtures import make_users, page_url

NEW_PAGES = ["waiting", "flows", "flow", "feed"]


@pytest.fixture
def viewer(db):
    web = Client()
    web.force_login(make_users()["viewer"])
    return web


def test_new_pages_need_the_view_permission(emq_env, db):
    users = make_users()
    for who, status in (("staff", 403), ("outsider", 302)):
        web = Client()
        web.force_login(users[who])
        for name in NEW_PAGES:
            assert web.get(page_url(name, queue="default", id="x")).status_code == status, (who, name)


def test_waiting_lists_jobs_with_their_pending_parents(emq_env, viewer):
    parents = [jobs.add.enqueue(1, 1), jobs.add.enqueue(2, 2)]
    child = jobs.add.using(after=parents).enqueue(3, 3)
    r = viewer.get(page_url("waiting", queue="default"))
    assert r.status_code == 200
    (row,) = r.context["rows"]
    assert row.id == child.id and row.fields["pending"] == 2
    overview = viewer.get(page_url("changelist"))
    assert overview.context["data"].queues[0].counts.waiting == 1


def test_a_batch_shows_its_progress_members_and_callback(emq_env, viewer):
    ref = emq.batch([jobs.noop.s(i) for i in range(3)], on_complete=jobs.noop.s())
    q = Queue("default")
    claimed = [c for c in q.bclaim(10, "w") if c.id in {m.id for m in ref.members}][:2]
    q.finish([Outcome(c.id, c.token, "completed", "null") for c in claimed])
    r = viewer.get(page_url("flows", queue="default"))
    (row,) = r.context["data"].rows
    assert (row.id, row.done, row.total, row.percent) == (ref.id, 2, 3, 66)
    page = viewer.get(page_url("flow", queue="default", id=ref.id))
    detail = page.context["detail"]
    assert [m[1] for m in detail.members] == [m.id for m in ref.members]
    assert detail.callbacks == [("on_complete", "default", ref.callback.id, "waiting")]
    assert b"emq-flow-progress" in page.content


def test_a_chain_and_a_job_page_show_the_workflow(emq_env, viewer):
    last = emq.chain(jobs.plus_one.s(1), jobs.plus_one.s())
    page = viewer.get(page_url("job", queue="default", id=last.id))
    assert page.status_code == 200 and b"Waits for" in page.content and b"Part of" in page.content
    flow_id = last.get().flow[1]
    assert viewer.get(page_url("flow", queue="default", id=flow_id)).context["detail"].row.total == 2


def test_a_job_page_shows_its_progress(emq_env, viewer):
    ref = jobs.add.enqueue(1, 1)
    q = Queue("default")
    (claimed,) = q.bclaim(1, "w")
    q.live.renew([(claimed.id, claimed.token)], 30_000, [(claimed.id, claimed.token, 0.42, "halfway-ish")])
    page = viewer.get(page_url("job", queue="default", id=ref.id))
    assert page.context["progress"] == (42, "halfway-ish") and b'id="emq-progress"' in page.content


def test_the_feed_answers_the_events_after_a_cursor(emq_env, viewer, settings):
    settings.EMQ_EVENTS = True
    first = viewer.get(page_url("feed", queue="default")).json()
    assert first["events"] == []
    ref = jobs.add.enqueue(1, 1)
    other = jobs.add.enqueue(2, 2)
    answer = viewer.get(page_url("feed", queue="default", since=first["since"], job=ref.id)).json()
    assert answer["events"] == [{"kind": "minted", "id": ref.id, "detail": "ready", "extra": None}]
    assert other.id not in str(answer)
    page = viewer.get(page_url("job", queue="default", id=ref.id))
    assert b"data-feed=" in page.content and f'data-job="{ref.id}"'.encode() in page.content


def test_a_dead_step_s_page_offers_to_resume_the_flow_and_doing_so_resumes_it(emq_env, db, client):
    """The job page of a chain's dead middle step lists the step its end told and says "Resume flow"; the
    retry there puts that step back to waiting."""
    from tests.dashboard_fixtures import action_url

    web = Client()
    web.force_login(make_users()["operator"])
    last = emq.chain(jobs.plus_one.s(1), jobs.broken_until_fixed.s("emqtest-dash-cause"), jobs.plus_one.s())
    q = Queue("default")
    (first,) = q.bclaim(1, "w")
    q.finish([Outcome(first.id, first.token, "completed", "2")])
    (middle,) = q.bclaim(1, "w")
    q.finish([Outcome(middle.id, middle.token, "dead", "RuntimeError: the cause is not fixed yet")])
    assert last.get().state == "dead"
    page = web.get(page_url("job", queue="default", id=middle.id))
    assert b"Resume flow" in page.content and b"Jobs its end told" in page.content
    assert page.context["links"].children == [("default", last.id, "dead")]
    assert b"fallen" not in page.content.split(b'id="emq-links"')[0], "listed under Workflow, not as a raw field"
    r = web.post(action_url("retry"), {"queue": "default", "ids": [middle.id], "next": "/"})
    assert r.status_code == 302
    assert q.get_job(middle.id).state == "ready" and last.get().state == "waiting"


def test_a_chord_shows_like_a_batch(emq_env, viewer):
    ref = emq.chord([jobs.plus_one.s(i) for i in range(3)], jobs.keep_results.s("k"))
    q = Queue("default")
    claimed = [c for c in q.bclaim(10, "w") if c.id in {m.id for m in ref.members}][:2]
    q.finish([Outcome(c.id, c.token, "completed", "1") for c in claimed])
    (row,) = viewer.get(page_url("flows", queue="default")).context["data"].rows
    assert (row.id, row.done, row.total) == (ref.id, 2, 3)
    page = viewer.get(page_url("flow", queue="default", id=ref.id))
    assert page.context["detail"].callbacks == [("callback", "default", ref.callback.id, "waiting")]
    assert b"2 completed, 0 dead, 0 cancelled" in page.content
