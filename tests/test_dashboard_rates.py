"""The Lanes page shows rate limits and their holds; operators set and remove them (change permission)."""

from __future__ import annotations

import pytest

import emq
from emq.core.engine import Queue
from tests import jobs
from tests.dashboard_fixtures import action_url, make_users, page_url, web_as


@pytest.fixture
def users(db):
    return make_users()


def test_set_show_and_remove_a_rate_limit(emq_env, users):
    web, lanes = web_as(users["operator"]), page_url("lanes", queue="default")
    assert "No rate limits" in web.get(lanes).content.decode()
    r = web.post(action_url("set_rate"), {"queue": "default", "group": "api", "limit": "2", "per": "60", "next": lanes},
                 follow=True)
    assert "at most 2 starts per 60 s" in r.content.decode()
    assert emq.rate_limits("default") == {"api": (2, 60.0)}
    jobs.add.using(group="api").enqueue_many([((i, 0), {}) for i in range(3)])
    assert len(Queue("default").bclaim(10, "w")) == 2
    html = web.get(lanes).content.decode()
    assert "group api" in html and "held</span> until" in html
    r = web.post(action_url("remove_rate"), {"queue": "default", "group": "api", "next": lanes}, follow=True)
    assert "Removed the rate limit of group api" in r.content.decode()
    assert emq.rate_limits("default") == {} and len(Queue("default").bclaim(10, "w")) == 1
    r = web.post(action_url("set_rate"), {"queue": "default", "group": "", "limit": "0", "per": "1", "next": lanes},
                 follow=True)
    assert "needs a whole number" in r.content.decode() and emq.rate_limits("default") == {}


def test_a_viewer_sees_limits_but_cannot_change_them(emq_env, users):
    emq.set_rate_limit("default", 5, 1)
    web = web_as(users["viewer"])
    html = web.get(page_url("lanes", queue="default")).content.decode()
    assert "whole queue" in html and "Set rate limit" not in html
    assert web.post(action_url("set_rate"), {"queue": "default", "limit": "1", "per": "1"}).status_code == 403
    assert emq.rate_limits("default") == {None: (5, 1.0)}
