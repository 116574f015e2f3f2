"""The dashboard's cancel, pause and resume, through Django's test client; Release says what it does."""

from __future__ import annotations

import pytest

from emq.core.engine import Queue
from tests import jobs
from tests.dashboard_fixtures import action_url, fill, make_users, page_url, web_as


@pytest.fixture
def users(db):
    return make_users()


@pytest.fixture
def filled(emq_env):
    return fill()


def test_cancel_asks_first_then_cancels_scheduled_ready_and_active_jobs(emq_env, users, filled):
    q, web = Queue("default"), web_as(users["operator"])
    ids = [filled["scheduled"][0], filled["ready"][0], filled["active"][0], filled["completed"][0]]
    form = {"queue": "default", "ids": ids, "next": page_url("scheduled", queue="default")}
    asked = web.post(action_url("cancel"), form)
    assert asked.status_code == 200 and b"Are you sure?" in asked.content and b"Cancel these jobs" in asked.content
    assert q.counts().cancelled == 0
    done = web.post(action_url("cancel"), {**form, "confirmed": "1"}, follow=True).content.decode()
    assert "Cancelled 3 jobs of queue default" in done and f"{filled['completed'][0]} (completed)" in done
    assert [q.get_job(i).state for i in ids] == ["cancelled", "cancelled", "cancelled", "completed"]
    c = q.counts()
    assert (c.cancelled, c.scheduled, c.ready, c.active) == (3, 0, 1, 1)


def test_cancel_buttons_sit_on_scheduled_ready_and_active_rows_and_the_job_page(emq_env, users, filled):
    web = web_as(users["operator"])
    cancel = action_url("cancel")
    assert cancel in web.get(page_url("scheduled", queue="default")).content.decode()
    assert cancel in web.get(page_url("leases", queue="default")).content.decode()
    ready = web.get(page_url("ready", queue="default", group="tenant-a"))
    assert [r.id for r in ready.context["rows"]] == filled["ready"] and cancel in ready.content.decode()
    for state in ("scheduled", "ready", "active"):
        html = web.get(page_url("job", queue="default", id=filled[state][0])).content.decode()
        assert 'id="emq-cancel"' in html, state
    assert 'id="emq-cancel"' not in web.get(page_url("job", queue="default", id=filled["dead"][0])).content.decode()
    viewer = web_as(users["viewer"]).get(page_url("ready", queue="default", group="tenant-a"))
    assert cancel not in viewer.content.decode()
    assert web_as(users["viewer"]).post(cancel, {"queue": "default", "ids": filled["ready"]}).status_code == 403


def test_release_is_named_and_explained_so_nobody_takes_it_for_cancel(emq_env, users, filled):
    web = web_as(users["operator"])
    html = web.get(page_url("leases", queue="default")).content.decode()
    assert "Give back lease…" in html and "Release…" not in html
    asked = web.post(action_url("release"), {"queue": "default", "ids": filled["active"][0], "token": "1"})
    assert "the attempt already running keeps running" in asked.content.decode()
    assert "To stop the job instead, cancel it" in asked.content.decode()


def test_cancelled_jobs_have_a_list_and_a_column_in_the_overview(emq_env, users, filled):
    Queue("default").cancel(filled["scheduled"])
    web = web_as(users["viewer"])
    listed = web.get(page_url("cancelled", queue="default"))
    assert [r.id for r in listed.context["rows"]] == filled["scheduled"]
    assert listed.context["rows"][0].fields["cancelled_from"] == "scheduled"
    overview = web.get(page_url("changelist"))
    assert overview.context["data"].queues[0].counts.cancelled == 1 and b">Cancelled<" in overview.content


def test_pause_and_resume_the_queue_and_a_lane_from_the_lanes_page(emq_env, users, filled):
    q, web = Queue("default"), web_as(users["operator"])
    jobs.add.using(group="tenant-b").enqueue(1, 1)
    lanes = page_url("lanes", queue="default")
    html = web.get(lanes).content.decode()
    assert "Pause queue" in html and html.count(">Pause</button>") == 4  # two lanes, on the ring and in the lane set
    r = web.post(action_url("pause"), {"queue": "default", "next": lanes}, follow=True)
    assert "Paused queue default" in r.content.decode() and q.paused()
    html = r.content.decode()
    assert 'Queue default is <strong class="emq-warn emq-paused">paused</strong>' in html and "Resume queue" in html
    assert b"paused" in web.get(page_url("changelist")).content
    r = web.post(action_url("pause"), {"queue": "default", "next": lanes}, follow=True)
    assert "was already paused" in r.content.decode()
    web.post(action_url("resume"), {"queue": "default"})
    assert not q.paused()

    r = web.post(action_url("pause"), {"queue": "default", "group": "tenant-a", "next": lanes}, follow=True)
    assert "Paused lane tenant-a of queue default" in r.content.decode() and q.paused("tenant-a")
    rows = {g.group: g for g in r.context["data"].lanes}
    assert rows["tenant-a"].paused and not rows["tenant-b"].paused
    assert [g.group for g in r.context["data"].paused_groups] == ["tenant-a"]
    assert q.client.lrange(q.keys.ring, 0, -1) == ["tenant-b"]
    web.post(action_url("resume"), {"queue": "default", "group": "tenant-a"})
    assert not q.paused("tenant-a") and "tenant-a" in q.client.lrange(q.keys.ring, 0, -1)


def test_pause_needs_the_change_permission(emq_env, users, filled):
    web = web_as(users["viewer"])
    assert "Pause queue" not in web.get(page_url("lanes", queue="default")).content.decode()
    assert web.post(action_url("pause"), {"queue": "default"}).status_code == 403
    assert not Queue("default").paused()


def test_a_paused_lane_without_work_is_still_listed_so_it_can_be_resumed(emq_env, users):
    Queue("default").pause("quiet")
    jobs.add.enqueue(1, 1)
    r = web_as(users["operator"]).get(page_url("lanes", queue="default"))
    assert [g.group for g in r.context["data"].paused_groups] == ["quiet"] and ">Resume</button>" in r.content.decode()
