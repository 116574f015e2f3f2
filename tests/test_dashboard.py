"""The job dashboard in the admin: every page and action through Django's test client, permissions first."""

from __future__ import annotations

import json

import pytest
from django.test import Client
from django.urls import reverse

from emq.core.engine import Queue
from emq.core.records import Outcome
from emq.dashboard import lists, queries
from emq.dashboard.views import recurrence_jobs_url
from tests import jobs, records
from tests.dashboard_fixtures import action_url, fill, make_users, page_url, web_as
from tests.procs import expire, wait_for

PAGES = ["changelist", "lanes", "leases", "stalled", "scheduled", "completed", "dead", "find", "job"]
ACTIONS = ["release", "sweep", "run_now", "delete", "retry", "retry_all", "delete_all"]


@pytest.fixture
def users(db):
    return make_users()


@pytest.fixture
def filled(emq_env):
    return fill()


# -- permissions ---------------------------------------------------------------------------


@pytest.mark.parametrize("who", ["anonymous", "outsider"])
def test_anonymous_and_non_staff_get_the_login_page_never_data(emq_env, users, filled, who):
    """Pages and actions alike redirect to the admin login and change nothing."""
    web = web_as(None if who == "anonymous" else users[who])
    for name in PAGES:
        r = web.get(page_url(name, queue="default", id=filled["dead"][0]))
        assert r.status_code == 302 and "/admin/login/" in r["Location"], name
    r = web.post(action_url("retry"), {"queue": "default", "ids": filled["dead"]})
    assert r.status_code == 302 and "/admin/login/" in r["Location"]
    assert Queue("default").get_job(filled["dead"][0]).state == "dead"


def test_staff_without_the_view_permission_is_refused(emq_env, users, filled):
    web = web_as(users["staff"])
    for name in PAGES:
        assert web.get(page_url(name, queue="default", id=filled["dead"][0])).status_code == 403, name
    for name in ACTIONS:
        assert web.post(action_url(name), {"queue": "default", "ids": filled["dead"]}).status_code == 403, name


def test_view_only_staff_sees_every_page_but_no_action(emq_env, users, filled):
    """The view permission shows data; every action needs the change permission (403) and shows no button."""
    web = web_as(users["viewer"])
    for name in PAGES[:-2]:
        r = web.get(page_url(name, queue="default"))
        assert r.status_code == 200, name
        assert b"emq_dashboard/action" not in r.content and b"/action/" not in r.content, name
    assert web.get(page_url("job", queue="default", id=filled["dead"][0])).status_code == 200
    for name in ACTIONS:
        r = web.post(action_url(name), {"queue": "default", "ids": filled["dead"], "confirmed": "1"})
        assert r.status_code == 403, name
    assert Queue("default").get_job(filled["dead"][0]).state == "dead"


def test_actions_are_post_only_and_csrf_checked(emq_env, users, filled):
    web = web_as(users["operator"])
    assert web.get(action_url("retry")).status_code == 405
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(users["operator"])
    assert strict.post(action_url("retry"), {"queue": "default", "ids": filled["dead"]}).status_code == 403
    assert Queue("default").get_job(filled["dead"][0]).state == "dead"


def test_the_dashboard_has_an_admin_entry(emq_env, users):
    r = web_as(users["viewer"]).get(reverse("admin:index"))
    assert b"job dashboard" in r.content.lower()
    assert reverse("admin:emq_dashboard_changelist").encode() in r.content


# -- pages ---------------------------------------------------------------------------------


def test_overview_shows_counts_chart_workers_and_pump(emq_env, users, filled, client):
    from emq.core import keys
    from emq.runtime.heartbeat import TTL

    prefix = emq_env["EMQ_PREFIX"]
    client.sadd(keys.registry_workers(prefix), "w-1", "w-gone")  # w-gone: killed, its entry expired
    info = json.dumps({"queues": ["default"], "running": 5, "concurrency": 8})  # "running" as its last beat said
    client.set(keys.worker(prefix, "w-1"), info, ex=TTL - 5)
    # `filled` leaves 2 active jobs leased by "worker-test"; one of them is w-1's.
    leased = client.zrange(Queue("default").keys.leases, 0, 0)[0]
    records.spoil(client, Queue("default").keys.job(leased), {"worker": "w-1"})
    client.set(Queue("default").keys.leader, "pump:test", px=10_000)
    r = web_as(users["viewer"]).get(page_url("changelist"))
    assert r.status_code == 200
    row = r.context["data"].queues[0]
    assert (row.counts.scheduled, row.counts.ready, row.counts.active, row.counts.completed, row.counts.dead) == (
        1, 2, 2, 1, 1,
    )
    assert row.leader == "pump:test" and row.last_tick_ms is not None
    workers = {w.id: w for w in r.context["data"].workers}
    # The dead worker is gone from the page and from the registry; in flight is the server's count.
    assert list(workers) == ["w-1"] and client.smembers(keys.registry_workers(prefix)) == {"w-1"}
    assert workers["w-1"].age_s == 5 and workers["w-1"].in_flight == 1
    assert r.context["totals"] == (1, 1)  # one completed, one failed (dead) this minute
    html = r.content.decode()
    assert "1 / 8" in html and "5 s ago" in html and "gone" not in html and 'class="num' in html


def test_in_flight_of_running_workers_adds_up_to_the_active_count(emq_env):
    """Two real workers mid-job: each one's in flight is read from the leases, so they sum to active."""
    import threading

    from emq.runtime.worker import Worker

    refs = jobs.sleep_for.enqueue_many([((1.5,), {})] * 5)
    workers = [Worker(["default"], concurrency=c, pump=False, burst=True, park_timeout=0.5) for c in (2, 3)]
    threads = [threading.Thread(target=w.run) for w in workers]
    for t in threads:
        t.start()
    try:
        wait_for(lambda: Queue("default").counts().active == 5, timeout=10, what="5 jobs running")
        data = queries.overview()
        in_flight = {w.id: w.in_flight for w in data.workers}
        assert in_flight == {workers[0].id: 2, workers[1].id: 3}
        assert sum(in_flight.values()) == data.queues[0].counts.active == 5
    finally:
        for t in threads:
            t.join(20)
    assert all(queries.Queue("default").get_job(r.id).state == "completed" for r in refs)


def test_lanes_show_the_ring_in_serving_order_with_depth_active_and_cap(emq_env, users, client):
    for g in ("g1", "g2", "g3"):
        jobs.add.using(group=g).enqueue_many([((1, 1), {})] * 2)
    q = Queue("default")
    q.set_group_limit("g2", 1)
    q.bclaim(3, "w")  # one of each group: g2 reaches its cap and leaves the ring
    r = web_as(users["viewer"]).get(page_url("lanes", queue="default"))
    data = r.context["data"]
    assert [g.group for g in data.ring] == ["g1", "g3"]
    lanes = {g.group: g for g in data.lanes}
    assert (lanes["g2"].depth, lanes["g2"].active, lanes["g2"].cap) == (1, 1, 1)
    assert lanes["g3"].depth == 1 and lanes["g3"].oldest_ms is not None
    assert (lanes["g3"].active, lanes["g3"].cap) == (1, None), "an uncapped group's running jobs, from the leases"
    assert "emq-capped" in r.content.decode()


def test_leases_show_worker_token_and_flag_expired_ones_as_stalled_candidates(emq_env, users, client):
    jobs.add.enqueue(1, 1)
    jobs.add.enqueue(2, 2)
    q = Queue("default")
    short, long = q.bclaim(2, "worker-x")
    expire(q, [short])
    wait_for(lambda: client.zrangebyscore(q.keys.leases, "-inf", queries.server_now(client)), what="a lease to expire")
    r = web_as(users["viewer"]).get(page_url("leases", queue="default"))
    rows = {row.id: row for row in r.context["rows"]}
    assert rows[short.id].fields["worker"] == "worker-x" and rows[short.id].fields["attempts"] == "1"
    assert rows[short.id].score <= r.context["now_ms"] < rows[long.id].score
    assert r.content.decode().count("stalled?") == 1


def test_release_asks_for_confirmation_then_gives_the_job_back(emq_env, users, filled):
    web, job_id = web_as(users["operator"]), filled["active"][0]
    form = {"queue": "default", "ids": job_id, "token": "1", "next": page_url("leases", queue="default")}
    r = web.post(action_url("release"), form)
    assert r.status_code == 200 and b"Are you sure?" in r.content
    assert Queue("default").get_job(job_id).state == "active"
    r = web.post(action_url("release"), {**form, "confirmed": "1"}, follow=True)
    assert Queue("default").get_job(job_id).state == "ready"
    assert f"Released job {job_id} (attempt 1)" in r.content.decode()
    r = web.post(action_url("release"), {**form, "confirmed": "1"}, follow=True)
    assert "Did not release" in r.content.decode()


def test_stalled_lists_reclaims_and_sweep_now_reclaims_expired_leases(emq_env, users, client):
    jobs.add.using(max_stalled=0).enqueue(1, 1)
    q = Queue("default")
    (claimed,) = q.bclaim(1, "worker-gone")
    expire(q, [claimed])
    wait_for(lambda: client.zrangebyscore(q.keys.leases, "-inf", queries.server_now(client)), what="lease expiry")
    web = web_as(users["operator"])
    r = web.post(action_url("sweep"), {"queue": "default", "next": page_url("stalled", queue="default")}, follow=True)
    html = r.content.decode()
    assert "Swept queue default: reclaimed 1 expired lease." in html
    (row,) = r.context["rows"]
    assert (row.id, row.fields["reclaimed_from"], row.fields["stalled"]) == (claimed.id, "worker-gone", "1")
    assert "dead as stalled" in html


def test_scheduled_lists_by_due_time_with_retries_and_runs_now_or_deletes(emq_env, users, client):
    later = jobs.add.enqueue_in(600, 1, 1)
    soon = jobs.add.enqueue_in(60, 2, 2)
    jobs.always_fails.enqueue()
    q = Queue("default")
    (c,) = q.bclaim(1, "w")
    q.finish([Outcome(c.id, c.token, "failed", "RuntimeError: boom", 300_000)])
    web = web_as(users["operator"])
    r = web.get(page_url("scheduled", queue="default"))
    assert [row.id for row in r.context["rows"]] == [soon.id, c.id, later.id]
    assert "retry: attempt 2 of 3" in r.content.decode() and "RuntimeError: boom" in r.content.decode()
    r = web.post(action_url("run_now"), {"queue": "default", "ids": [soon.id, later.id + "x"]}, follow=True)
    assert q.get_job(soon.id).state == "ready"
    html = r.content.decode()
    assert f"Made 1 scheduled job of queue default ready now: {soon.id}." in html and "(missing)" in html
    web.post(action_url("delete"), {"queue": "default", "ids": [later.id], "confirmed": "1"})
    assert not client.exists(q.keys.job(later.id)) and client.zscore(q.keys.scheduled, later.id) is None


def test_dead_letter_shows_errors_and_retry_gives_a_fresh_budget(emq_env, users, filled):
    q, job_id = Queue("default"), filled["dead"][0]
    web = web_as(users["operator"])
    r = web.get(page_url("dead", queue="default"))
    assert "ValueError: broken" in r.content.decode() and "Traceback: line 1" in r.content.decode()
    r = web.post(action_url("retry"), {"queue": "default", "ids": [job_id]}, follow=True)
    assert f"Retried 1 dead job of queue default with a fresh budget of attempts: {job_id}." in r.content.decode()
    job = q.get_job(job_id)
    assert (job.state, job.attempts, job.max_attempts) == ("ready", 1, 4)
    again = {c.id: c for c in q.bclaim(5, "w")}[job_id]
    assert again.token == 2  # the token keeps growing: a fencing token is never reused


def test_retry_all_and_delete_all_of_a_filter(emq_env, users, client):
    q = Queue("default")
    jobs.add.enqueue_many([((i, i), {}) for i in range(3)])
    jobs.touch.enqueue_many([(("/dev/null",), {}) for _ in range(2)])
    for c in q.bclaim(5, "w"):
        q.finish([Outcome(c.id, c.token, "dead", "boom")])
    web = web_as(users["operator"])
    r = web.post(action_url("retry_all"), {"queue": "default", "name": "touch", "confirmed": "1"}, follow=True)
    assert "Retried 2 dead jobs matching name &#x27;touch&#x27; in queue default." in r.content.decode()
    assert q.counts().dead == 3
    r = web.post(action_url("delete_all"), {"queue": "default"})
    assert b"Are you sure?" in r.content
    web.post(action_url("delete_all"), {"queue": "default", "confirmed": "1"})
    assert q.counts().dead == 0 and q.counts().ready == 2


def test_job_detail_shows_every_field_masks_secrets_and_lists_each_attempt(emq_env, users):
    ref = jobs.always_fails.using(max_attempts=2).enqueue(
        reason={"password": "hunter2", "api_key": "k-123", "user": "ada", "nested": [{"Authorization": "Bearer x"}]}
    )
    q = Queue("default")
    for attempt in (1, 2):
        (c,) = q.bclaim(1, "w")
        q.finish([Outcome(c.id, c.token, "failed", f"RuntimeError: try {attempt}\nTraceback …", 0)])
    r = web_as(users["viewer"]).get(page_url("job", queue="default", id=ref.id))
    html = r.content.decode()
    assert "hunter2" not in html and "k-123" not in html and "Bearer x" not in html
    assert "ada" in html and "••••••••" in html
    assert "RuntimeError: try 1" in html and "RuntimeError: try 2" in html
    for field in ("fn", "state", "attempts", "max_attempts", "created", "due", "claimed", "lease_until", "worker"):
        assert f'<th scope="row">{field}</th>' in html, field
    assert [e["attempt"] for e in r.context["job"].errors] == [1, 2]


def test_find_a_job_by_id_goes_to_its_page(emq_env, users, filled):
    web = web_as(users["viewer"])
    r = web.get(page_url("find", id=filled["dead"][0]))
    assert r.status_code == 302 and r["Location"] == page_url("job", queue="default", id=filled["dead"][0])
    r = web.get(page_url("find", id="no-such-job"), follow=True)
    assert "No job &#x27;no-such-job&#x27; in any known queue." in r.content.decode()


def test_lists_filter_by_name_group_and_origin_and_recurrences_link_to_their_jobs(emq_env, users):
    q = Queue("default")
    spec = jobs.add.spec((1, 1), {}, "", origin="repeat:nightly")
    q.mint([spec, jobs.add.spec((2, 2), {}, ""), jobs.touch.using(group="t").spec(("/dev/null",), {}, "")])
    for c in q.bclaim(3, "w"):
        q.finish([Outcome(c.id, c.token, "completed", "null")])
    web = web_as(users["viewer"])
    r = web.get(recurrence_jobs_url("default", "nightly"))
    assert [row.id for row in r.context["rows"]] == [spec.id]
    assert "bounded scan" in r.content.decode()
    assert len(web.get(page_url("completed", queue="default", name="ADD")).context["rows"]) == 2
    assert len(web.get(page_url("completed", queue="default", group="t")).context["rows"]) == 1


def test_pages_never_load_a_whole_set(emq_env, users, monkeypatch):
    """A long dead-letter set is shown a page at a time, and a filtered page reads a bounded slice."""
    from emq.dashboard import scan

    monkeypatch.setattr(scan, "SCAN_BUDGET", 40)
    q = Queue("default")
    jobs.add.enqueue_many([((i, i), {}) for i in range(120)])
    for c in q.bclaim(120, "w"):
        q.finish([Outcome(c.id, c.token, "dead", "boom")])
    web = web_as(users["viewer"])
    r = web.get(page_url("dead", queue="default"))
    assert len(r.context["rows"]) == 50 and r.context["next_url"]
    r = web.get(r.context["next_url"])
    assert len(r.context["rows"]) == 50 and r.context["slice"].start == 50
    r = web.get(page_url("dead", queue="default", name="nothing-matches"))
    assert r.context["slice"].scanned == 40 and r.context["rows"] == [] and r.context["next_url"]


# -- the scripts behind the actions ----------------------------------------------------------


def test_delete_refuses_ready_and_active_jobs(emq_env, filled):
    q = Queue("default")
    assert q.admin.delete([filled["ready"][-1], filled["active"][0], "nope"]) == ["ready", "active", "missing"]
    assert q.admin.delete(filled["completed"]) == ["ok"] and q.counts().completed == 0


def test_run_now_and_retry_leave_jobs_of_other_states_alone(emq_env, filled):
    q = Queue("default")
    assert q.admin.run_now(filled["dead"]) == ["dead"]
    assert q.admin.retry(filled["scheduled"]) == ["scheduled"]
    assert q.admin.retry(filled["dead"]) == ["ok"] and q.admin.retry(filled["dead"]) == ["ready"]


def test_an_unknown_action_is_not_found(emq_env, users):
    assert web_as(users["operator"]).post(action_url("explode"), {"queue": "default"}).status_code == 404


def test_find_never_sends_the_user_to_another_site(emq_env, users):
    r = web_as(users["viewer"]).get(page_url("find", id="nope"), HTTP_REFERER="https://evil.example/")
    assert r["Location"] == page_url("changelist")


def test_relative_times_and_secret_masking():
    from emq.dashboard import present

    assert [present.relative(t, 100_000) for t in (104_200, 100_300, 100_000 - 180_000, 100_000 - 7_200_000)] == [
        "in 4 s", "now", "3 min ago", "2 h ago",
    ]
    assert present.duration(850) == "850 ms" and present.duration(61_000) == "1 min"
    from emq.dashboard.masking import MASK, Masked

    value = {"Password": "x", "db": {"secret_key": "y", "host": "h"}, "tokens": ["t"], "n": [{"auth": 1}]}
    assert Masked().value(value) == {"Password": MASK, "db": {"secret_key": MASK, "host": "h"}, "tokens": MASK,
                                     "n": [{"auth": MASK}]}
    assert present.pretty("not json") == "not json"
    assert present.exact(10**15).endswith("(beyond year 9999)") and present.as_ms("abc") is None


def test_an_unreachable_server_is_a_clear_503_not_a_crash(emq_env, users):
    from django.test import override_settings

    with override_settings(EMQ_URL="redis://127.0.0.1:1/0"):
        r = web_as(users["viewer"]).get(page_url("changelist"))
    assert r.status_code == 503 and b"cannot reach Valkey at redis://127.0.0.1:1/0" in r.content


def test_a_partitioned_queue_shows_every_partition_and_finds_its_jobs(emq_env, users, settings):
    """EMQ_PARTITIONS splits a queue over slots; the overview lists it once, its partitions beneath."""
    settings.EMQ_PARTITIONS = {"clicks": 3}
    refs = jobs.add.using(queue="clicks").enqueue_many([((i, i), {}) for i in range(6)])
    r = web_as(users["viewer"]).get(page_url("changelist"))
    (row,) = r.context["data"].queues
    assert row.name == "clicks" and row.counts.ready == 6
    parts = {p.name: p.counts.ready for p in row.partitions}
    assert set(parts) == {"clicks#0", "clicks#1", "clicks#2"} and sum(parts.values()) == 6
    html = r.content.decode()
    assert html.count(">clicks <") == 1 and all(f">clicks#{i}</a>" in html for i in range(3))
    assert lists.find(refs[0].id) == [f"clicks#{refs[0].id.rsplit('~', 1)[1]}"]


def test_secrets_are_masked_by_name_position_result_and_error(emq_env, users, client):
    """A secret passed by position or keyword never shows, nor when a result or an error repeats it."""
    ref = jobs.login.enqueue("ada", "hunter2", api_token="tok-123456")
    q = Queue("default")
    (c,) = q.bclaim(1, "w")
    q.finish([Outcome(c.id, c.token, "dead", "PermissionError: bad password hunter2 for ada\nTraceback …")])
    done = jobs.login.enqueue("bob", "s3cr3t!", api_token="tok-999999")
    (c,) = q.bclaim(1, "w")
    q.finish([Outcome(c.id, c.token, "completed", '{"session": "sess-42", "echo": "s3cr3t!"}')])
    web = web_as(users["viewer"])
    pages = [page_url("job", queue="default", id=ref.id), page_url("job", queue="default", id=done.id),
             page_url("dead", queue="default"), page_url("completed", queue="default")]
    for url in pages:
        html = web.get(url).content.decode()
        for leaked in ("hunter2", "tok-123456", "s3cr3t!", "tok-999999", "sess-42"):
            assert leaked not in html, f"{leaked} shown on {url}"
    assert "ada" in web.get(pages[0]).content.decode()


def test_far_future_corrupt_times_and_wild_paging_never_break_a_page(emq_env, users, client):
    """A job due in year 9999 (enqueue refuses it: written by hand), a corrupt stored time and
    ?pos=99999999999999999999 answer 200."""
    far = jobs.add.enqueue_in(60, 1, 1)
    odd = jobs.add.enqueue_in(60, 2, 2)
    records.spoil(client, Queue("default").keys.job(far.id), {"due": "253402300799999"})
    client.zadd(Queue("default").keys.scheduled, {far.id: 253402300799999})
    records.spoil(client, Queue("default").keys.job(odd.id), {"due": "soon", "created": "-"})
    web, huge = web_as(users["viewer"]), "99999999999999999999"
    urls = [page_url("changelist"), page_url("scheduled", queue="default"), page_url("lanes", queue="default"),
            page_url("job", queue="default", id=far.id), page_url("job", queue="default", id=odd.id),
            page_url("scheduled", queue="default", pos=huge), page_url("lanes", queue="default", pos=huge, lc=huge),
            page_url("dead", queue="default", pos="-5"), page_url("changelist", qc=huge, wc="x")]
    for url in urls:
        assert web.get(url).status_code == 200, url
