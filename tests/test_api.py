"""The HTTP API (emq.api) through Django's test client: every endpoint with a token of each scope,
sessions with and without CSRF, bodies good and bad, the jobs it reads and changes, its OpenAPI
document. The event stream and the guide's curl examples run against a live server
(tests/test_api_live.py)."""

from __future__ import annotations

import asyncio
import dataclasses
import io
import json

import jsonschema
import pytest
from django.core import checks
from django.test import AsyncClient, Client, RequestFactory, override_settings
from django.urls import resolve
from django.utils.crypto import get_random_string
from openapi_spec_validator import validate

from emq.api import cursor, openapi, options
from emq.api.routes import ROUTES
from emq.core import topology
from emq.core.engine import Queue
from emq.core.logical import LogicalQueue
from emq.core.records import Job, Outcome
from emq.jobs import OPTION_NAMES
from tests import jobs
from tests.dashboard_fixtures import make_users, web_as

API = "/emq/api"
TOKENS = {
    "reader": {"token": "reader-token-0123456789", "scopes": ["read"]},
    "enqueuer": {"token": "enqueuer-token-0123456789", "scopes": ["enqueue"]},
    "controller": {"token": "controller-token-0123456789", "scopes": ["control"]},
    "admin": {"token": "admin-token-0123456789", "scopes": ["read", "enqueue", "control"]},
}
ADD = {"name": "tests.jobs.add", "args": [1, 2]}


@pytest.fixture
def api(emq_env, settings):
    settings.EMQ_API_TOKENS = TOKENS
    settings.EMQ_EVENTS = True
    settings.EMQ_API_EVENTS_SECONDS = 0.3
    settings.EMQ_API_EVENTS_HEARTBEAT = 0.1
    return emq_env


@pytest.fixture
def users(db):
    return make_users()


def as_(who: str) -> Client:
    return Client(HTTP_AUTHORIZATION=f"Bearer {TOKENS[who]['token']}")


def post(client: Client, path: str, body=None, **extra):
    data = body if isinstance(body, bytes | str) else json.dumps(body) if body is not None else ""
    return client.post(API + path, data, content_type="application/json", **extra)


def dead_job(job_id: str | None = None, queue: str = "graveyard") -> str:
    """A job of its own queue that ended dead (its attempts used up)."""
    ref = jobs.add.using(queue=queue, **({"job_id": job_id} if job_id else {})).enqueue(1, 2)
    q = Queue(topology.names(queue)[0])
    claimed = q.bclaim(1, "test-worker")
    assert [c.id for c in claimed] == [ref.id]
    q.finish([Outcome(ref.id, claimed[0].token, "dead", "RuntimeError: boom")])
    return ref.id


def counts(*queues: str) -> list:
    return [dataclasses.replace(LogicalQueue(q).counts(), now_ms=0) for q in queues]


def jobs_in(queue: str) -> int:
    c = LogicalQueue(queue).counts()
    return c.waiting + c.scheduled + c.ready + c.active + c.completed + c.dead + c.cancelled


def refused(response, status: int, code: str) -> dict:
    assert response.status_code == status, response.content
    assert response["Content-Type"] == "application/json"
    body = json.loads(response.content)
    assert body["error"] == code and body["detail"], body
    return body


# -- who may call what ---------------------------------------------------------------------------

SCOPE = {"enqueue": "enqueue", "read": "read", "queues": "read", "events": "read", "cancel": "control",
         "retry": "control"}
SUCCESS = {"enqueue": 201, "read": 200, "queues": 200, "events": 200, "cancel": 200, "retry": 200}


def call(endpoint: str, client: Client, ids: dict[str, str]):
    paths = {"read": f"/jobs/{ids['ready']}", "queues": "/queues/", "events": "/events/default",
             "cancel": f"/jobs/{ids['ready']}/cancel", "retry": f"/jobs/{ids['dead']}/retry"}
    if endpoint == "enqueue":
        return post(client, "/jobs/", ADD)
    if endpoint in ("cancel", "retry"):
        return post(client, paths[endpoint])
    return client.get(API + paths[endpoint])


@pytest.mark.parametrize("endpoint", list(SCOPE))
def test_each_endpoint_takes_its_scope_and_refuses_every_other_caller(api, endpoint):
    """Tokens without the scope get 403, no token / a wrong one / a non-ASCII one 401, and none of them
    changes a thing; the token with the scope gets its answer."""
    ids = {"ready": jobs.add.enqueue(1, 2).id, "dead": dead_job()}
    before = counts("default", "graveyard")
    for who in ("reader", "enqueuer", "controller"):
        if SCOPE[endpoint] not in TOKENS[who]["scopes"]:
            body = refused(call(endpoint, as_(who), ids), 403, "forbidden")
            assert f"'{SCOPE[endpoint]}'" in body["detail"]
    for header in (None, "Bearer not-a-token-at-all", "Bearer ключ-от-всех-дверей", "Basic YWRhOmh1bnRlcjI="):
        client = Client() if header is None else Client(HTTP_AUTHORIZATION=header)
        r = call(endpoint, client, ids)
        refused(r, 401, "unauthorized")
        assert r["WWW-Authenticate"].startswith('Bearer realm="emq api"')
    assert counts("default", "graveyard") == before
    allowed = next(w for w in ("reader", "enqueuer", "controller") if SCOPE[endpoint] in TOKENS[w]["scopes"])
    r = call(endpoint, as_(allowed), ids)
    assert r.status_code == SUCCESS[endpoint], getattr(r, "content", b"")
    if r.streaming:
        assert b"".join(r.streaming_content).startswith(b"retry: 1000\n")
    else:
        assert r["Cache-Control"].startswith("max-age=0")
    assert counts("default", "graveyard") != before or endpoint in ("read", "queues", "events")


def test_a_staff_session_has_the_dashboard_permissions(api, users):
    """View permission: read; change permission: enqueue and control; staff without either, a non-staff
    user and nobody are refused."""
    ready = jobs.add.enqueue(1, 2).id
    assert web_as(users["viewer"]).get(f"{API}/jobs/{ready}").json()["state"] == "ready"
    refused(post(web_as(users["viewer"]), "/jobs/", ADD), 403, "forbidden")
    refused(post(web_as(users["viewer"]), f"/jobs/{ready}/cancel"), 403, "forbidden")
    assert post(web_as(users["operator"]), "/jobs/", ADD).status_code == 201
    assert post(web_as(users["operator"]), f"/jobs/{ready}/cancel").json()["state"] == "cancelled"
    refused(web_as(users["staff"]).get(f"{API}/jobs/{ready}"), 403, "forbidden")
    refused(web_as(users["outsider"]).get(f"{API}/jobs/{ready}"), 403, "forbidden")
    refused(web_as().get(f"{API}/jobs/{ready}"), 401, "unauthorized")


def test_a_session_post_must_pass_the_csrf_check(api, users):
    """Without the CSRF token a session's POST is refused and mints nothing; with it, it goes through.
    A GET needs none, and a bearer token beside the session is judged alone."""
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(users["operator"])
    refused(post(strict, "/jobs/", ADD), 403, "csrf_failed")
    assert LogicalQueue("default").counts().ready == 0
    secret = get_random_string(32)
    strict.cookies["csrftoken"] = secret
    refused(post(strict, "/jobs/", ADD, HTTP_X_CSRFTOKEN=get_random_string(32)), 403, "csrf_failed")
    created = post(strict, "/jobs/", ADD, HTTP_X_CSRFTOKEN=secret)
    assert created.status_code == 201 and LogicalQueue("default").counts().ready == 1
    assert strict.get(f"{API}/jobs/{created.json()['id']}").status_code == 200
    refused(strict.get(f"{API}/queues/", HTTP_AUTHORIZATION="Bearer wrong-token-for-this"), 401, "unauthorized")


# -- bodies ---------------------------------------------------------------------------------------


class Untouchable(io.RawIOBase):
    def readinto(self, buffer):
        raise AssertionError("the body was read")


def test_a_body_over_the_limit_is_refused_unread(api, settings):
    """2 MB declared: 413 from the Content-Length alone, before the token is even looked at."""
    request = RequestFactory().generic(
        "POST", f"{API}/jobs/", b"", content_type="application/json",
        **{"wsgi.input": Untouchable(), "CONTENT_LENGTH": str(2 * 1024 * 1024)})
    body = refused(resolve(f"{API}/jobs/").func(request), 413, "too_large")
    assert "2,097,152 bytes" in body["detail"] and "EMQ_API_MAX_BODY (1,048,576 bytes)" in body["detail"]
    refused(post(as_("enqueuer"), "/jobs/", b"x" * (2 * 1024 * 1024)), 413, "too_large")
    settings.EMQ_API_MAX_BODY = 64
    refused(post(as_("enqueuer"), "/jobs/", {**ADD, "kwargs": {}, "queue": "q" * 60}), 413, "too_large")
    assert LogicalQueue("default").counts().ready == 0


@pytest.mark.parametrize("body, fragment", [
    (b"{not json", "not valid JSON"),
    (b"", "the body is empty"),
    (b'[1, 2]', "must be a JSON object"),
    (b'{"name": "tests.jobs.add", "args": [NaN, 1]}', "NaN is not JSON"),
    (b"\xff\xfe{}", "not valid JSON"),
])
def test_a_body_that_is_not_a_json_object_is_a_400(api, body, fragment):
    assert fragment in refused(post(as_("enqueuer"), "/jobs/", body), 400, "invalid_json")["detail"]


@pytest.mark.parametrize("body, code, fragment", [
    ({"name": "tests.jobs.ad", "args": [1, 2]}, "unknown_job", "did you mean tests.jobs.add"),
    ({"name": "os.system", "args": ["true"]}, "unknown_job", "no job registered as 'os.system'"),
    ({"args": [1]}, "unknown_job", '"name" must be'),
    ({"name": "tests.jobs.add", "args": [1]}, "invalid_call", "add(a, b): missing a required argument: 'b'"),
    ({"name": "tests.jobs.add", "args": [1, 2, 3]}, "invalid_call", "too many positional arguments"),
    ({"name": "tests.jobs.add", "args": [1, 2], "kwargs": {"c": 2}}, "invalid_call", "unexpected keyword argument 'c'"),
    ({"name": "tests.jobs.add", "args": {"a": 1}}, "invalid_body", '"args" must be a JSON list'),
    ({**ADD, "kwargs": [1]}, "invalid_body", '"kwargs" must be a JSON object'),
    ({**ADD, "queues": "x"}, "invalid_body", "unknown field(s) ['queues']"),
    ({**ADD, "delay": 5, "at": "2030-01-01T00:00:00Z"}, "invalid_body", "not both"),
    ({**ADD, "delay": -1}, "invalid_body", '"delay" must be a number of seconds >= 0'),
    ({**ADD, "delay": True}, "invalid_body", '"delay" must be'),
    ({**ADD, "at": "2030-01-01T09:00:00"}, "invalid_body", "with its offset"),
    ({**ADD, "at": "tomorrow"}, "invalid_body", "ISO 8601"),
    ({**ADD, "queue": "a{b}"}, "invalid_queue", "braces"),
    ({**ADD, "queue": ""}, "invalid_queue", "queue name of 1 to 200"),
    ({**ADD, "options": {"prio": 1}}, "invalid_option", 'unknown option "prio"; the API takes: group, priority'),
    ({**ADD, "options": {"priority": "high"}}, "invalid_option", 'option "priority" must be a whole number'),
    ({**ADD, "options": {"priority": 1000}}, "invalid_call", "from -100 to 100, not 1000"),
    ({**ADD, "options": {"lease": 0.5}}, "invalid_call", "lease of tests.jobs.add must be at least 1"),
    ({**ADD, "options": {"backoff": [1]}}, "invalid_option", "[base, cap]"),
    ({**ADD, "options": {"unique_until": "never"}}, "invalid_option", '"finish" or "start"'),
    ({**ADD, "options": {"after": "abc"}}, "invalid_option", "a list of job ids"),
    ({**ADD, "options": {"on_commit": True}}, "invalid_option", "no database transaction"),
    ({**ADD, "options": {"queue": "x"}}, "invalid_option", 'beside "name"'),
    ({**ADD, "options": {"retry_on": "ValueError"}}, "invalid_option", "belongs to the job's code"),
    ({**ADD, "options": [1]}, "invalid_option", '"options" must be a JSON object'),
    ({**ADD, "options": {"job_id": "x", "unique_for": 5}}, "invalid_call", "give job_id or unique_for"),
])
def test_a_call_that_cannot_be_minted_is_a_400_that_says_why_and_mints_nothing(api, body, code, fragment):
    detail = refused(post(as_("enqueuer"), "/jobs/", body), 400, code)["detail"]
    assert fragment in detail, detail
    assert jobs_in("default") == 0


def test_arguments_over_the_payload_limit_are_a_413(api, settings):
    settings.EMQ_MAX_PAYLOAD = 100
    refused(post(as_("enqueuer"), "/jobs/", {**ADD, "args": ["x" * 200, 1]}), 413, "too_large")


# -- enqueue --------------------------------------------------------------------------------------


def test_enqueue_mints_with_the_options_given(api):
    """Group, priority, queue and a job id reach the job; the same job id again mints nothing (200)."""
    body = {**ADD, "queue": "mail", "options": {"group": "tenant-7", "priority": 5, "job_id": "welcome-7",
                                                 "max_attempts": 9, "backoff": [1, 2]}}
    r = post(as_("enqueuer"), "/jobs/", body)
    assert (r.status_code, r.json()) == (201, {"id": "welcome-7", "queue": "mail", "state": "ready", "created": True})
    job = LogicalQueue("mail").get_job("welcome-7")
    assert (job.name, job.args, job.group, job.priority, job.max_attempts) == ("tests.jobs.add", [1, 2], "tenant-7",
                                                                              5, 9)
    assert r["Location"] == f"{API}/jobs/welcome-7"
    again = post(as_("enqueuer"), "/jobs/", body)
    assert (again.status_code, again.json()["created"], again.json()["id"]) == (200, False, "welcome-7")
    assert LogicalQueue("mail").counts().ready == 1
    assert as_("reader").get(again["Location"]).json()["group"] == "tenant-7"


def test_enqueue_later_and_after_others(api):
    """delay and at make a scheduled job due then, on the server's clock; after= makes it wait."""
    later = post(as_("admin"), "/jobs/", {**ADD, "delay": 3600}).json()
    at = post(as_("admin"), "/jobs/", {**ADD, "at": "2099-01-01T10:00:00+01:00"}).json()
    assert later["state"] == at["state"] == "scheduled"
    due = LogicalQueue("default").get_job(at["id"]).due
    assert due.isoformat() == "2099-01-01T09:00:00+00:00"
    waits = post(as_("admin"), "/jobs/", {**ADD, "options": {"after": [later["id"]]}}).json()
    assert waits["state"] == "waiting"
    kwargs = post(as_("admin"), "/jobs/", {"name": "tests.jobs.add", "kwargs": {"a": 1, "b": 2}}).json()
    assert LogicalQueue("default").get_job(kwargs["id"]).kwargs == {"a": 1, "b": 2}


# -- read, cancel, retry ---------------------------------------------------------------------------


def test_read_masks_secrets_as_the_dashboard_does(api):
    """A positional password, a keyword token, the result and the error text: no secret is shown."""
    ref = jobs.login.using(queue="auth").enqueue("ada", "hunter2", api_token="tok-123456")
    q = Queue("auth")
    claimed = q.bclaim(1, "test-worker")
    q.finish([Outcome(ref.id, claimed[0].token, "dead", "ValueError: bad password hunter2 for tok-123456")])
    job = as_("reader").get(f"{API}/jobs/{ref.id}").json()
    assert job["args"] == ["ada", "••••••••"] and job["kwargs"] == {"api_token": "••••••••"}
    assert job["error"] == "ValueError: bad password •••••••• for ••••••••"
    assert "hunter2" not in json.dumps(job) and "tok-123456" not in json.dumps(job)
    assert (job["state"], job["queue"], job["attempts"], job["name"]) == ("dead", "auth", 1, "tests.jobs.login")


def test_an_id_stands_alone_unless_two_queues_hold_it(api, settings):
    """Without ?queue= the job is found in any known queue, a partition too; an id two queues hold is a
    409 until the queue is named; an unknown id or queue is a 404."""
    settings.EMQ_PARTITIONS = {"clicks": 3}
    click = post(as_("admin"), "/jobs/", {**ADD, "queue": "clicks"}).json()
    found = as_("reader").get(f"{API}/jobs/{click['id']}").json()
    assert found["id"] == click["id"] and topology.logical(found["queue"]) == "clicks"
    for queue in ("one", "two"):
        post(as_("admin"), "/jobs/", {**ADD, "queue": queue, "options": {"job_id": "twice"}})
    body = refused(as_("reader").get(f"{API}/jobs/twice"), 409, "ambiguous_id")
    assert "one" in body["detail"] and "two" in body["detail"] and "?queue=" in body["detail"]
    assert as_("reader").get(f"{API}/jobs/twice?queue=two").json()["queue"] == "two"
    assert post(as_("admin"), "/jobs/twice/cancel?queue=one").json() == {"id": "twice", "queue": "one",
                                                                         "state": "cancelled"}
    refused(as_("reader").get(f"{API}/jobs/no-such-job"), 404, "job_not_found")
    refused(as_("reader").get(f"{API}/jobs/twice?queue=three"), 404, "job_not_found")
    refused(as_("reader").get(f"{API}/jobs/twice?queue=a{{b}}"), 400, "invalid_queue")


def test_changes_are_logged_with_who_made_them(api, caplog):
    """The audit trail: every POST names the caller and the answer; reads are not logged."""
    ready = jobs.add.enqueue(1, 2).id
    with caplog.at_level("INFO", logger="emq.api"):
        post(as_("controller"), f"/jobs/{ready}/cancel")
        post(as_("controller"), f"/jobs/{ready}/cancel")
        as_("reader").get(f"{API}/jobs/{ready}")
    assert [r.getMessage() for r in caplog.records if r.name == "emq.api"] == [
        f"emq api: POST {API}/jobs/{ready}/cancel by token 'controller': {status}" for status in (200, 409)]


def test_an_unreachable_server_is_a_503_to_retry(api):
    with override_settings(EMQ_URL="redis://127.0.0.1:1/0"):  # the test's own server is back for its teardown
        r = as_("reader").get(f"{API}/queues/")
    assert "cannot reach Valkey" in refused(r, 503, "unavailable")["detail"] and r["Retry-After"] == "1"


def test_cancel_and_retry_change_state_once(api):
    """Cancel a ready job, then 409; retry a dead job (ready, a fresh budget), then 409; 404 for none."""
    ready = jobs.add.enqueue(1, 2).id
    assert post(as_("controller"), f"/jobs/{ready}/cancel").json()["state"] == "cancelled"
    assert LogicalQueue("default").get_job(ready).state == "cancelled"
    assert "is cancelled" in refused(post(as_("controller"), f"/jobs/{ready}/cancel"), 409, "wrong_state")["detail"]
    dead = dead_job()
    r = post(as_("controller"), f"/jobs/{dead}/retry")
    assert r.json() == {"id": dead, "queue": "graveyard", "state": "ready"}
    job = LogicalQueue("graveyard").get_job(dead)
    assert (job.state, job.max_attempts - job.attempts) == ("ready", 3)
    assert "only dead or cancelled jobs" in refused(post(as_("controller"), f"/jobs/{dead}/retry"), 409,
                                                  "wrong_state")["detail"]
    refused(post(as_("controller"), "/jobs/nothing-here/retry"), 404, "job_not_found")
    refused(post(as_("controller"), "/jobs/nothing-here/cancel?queue=graveyard"), 404, "job_not_found")


# -- queues, routes ---------------------------------------------------------------------------------


def test_queue_counts_page_through_the_queues(api, settings):
    settings.EMQ_PARTITIONS = {"clicks": 2}
    for queue, n in (("alpha", 3), ("beta", 1), ("clicks", 4)):
        jobs.add.using(queue=queue).enqueue_many([((i, i), {}) for i in range(n)])
    jobs.add.using(queue="beta").enqueue_in(600, 1, 1)
    page = as_("reader").get(f"{API}/queues/?limit=2").json()
    assert [(q["name"], q["ready"], q["scheduled"]) for q in page["queues"]] == [("alpha", 3, 0), ("beta", 1, 1)]
    assert (page["total"], page["next_offset"]) == (3, 2) and page["queues"][1]["next_due"]
    rest = as_("reader").get(f"{API}/queues/?offset=2&limit=2").json()
    assert [(q["name"], q["partitions"], q["ready"]) for q in rest["queues"]] == [("clicks", 2, 4)]
    assert rest["next_offset"] is None
    refused(as_("reader").get(f"{API}/queues/?limit=0"), 400, "bad_request")
    refused(as_("reader").get(f"{API}/queues/?offset=x"), 400, "bad_request")


def test_unknown_routes_and_methods_answer_json(api):
    body = refused(as_("reader").get(f"{API}/nothing/here"), 404, "no_route")
    assert "GET /jobs/{job_id}" in body["detail"] and "GET /openapi.json" in body["detail"]
    r = as_("reader").get(f"{API}/jobs/")
    refused(r, 405, "method_not_allowed")
    assert r["Allow"] == "POST"
    refused(as_("reader").delete(f"{API}/jobs/some-id"), 405, "method_not_allowed")


def test_under_asgi_the_stream_is_an_async_one(api):
    """An ASGI server gets an async iterator: events go out as they come, not once the response ends."""
    async def read() -> tuple[bool, bytes]:
        headers = {"Authorization": f"Bearer {TOKENS['reader']['token']}", "Last-Event-ID": "0"}
        r = await AsyncClient().get(f"{API}/events/default", headers=headers)
        return r.is_async, b"".join([part async for part in r.streaming_content])

    jobs.add.enqueue(1, 2)
    is_async, text = asyncio.run(read())
    assert is_async and text.startswith(b"retry: 1000\n") and b'"kind": "minted"' in text


def test_events_are_refused_while_emq_events_is_off(api, settings):
    settings.EMQ_EVENTS = False
    assert "EMQ_EVENTS" in refused(as_("reader").get(f"{API}/events/default"), 409, "events_off")["detail"]
    settings.EMQ_EVENTS = True
    refused(as_("reader").get(f"{API}/events/default", HTTP_LAST_EVENT_ID="yesterday"), 400, "invalid_event_id")


def test_a_last_event_id_names_a_place_in_each_partition():
    """An entry taken whole is its stream id; one left inside, its id and the changes taken; resuming
    inside an entry reads again from just before it (the changes taken are then left out)."""
    at = [cursor.Position("1718000000000-0"), cursor.Position("1718000000005-3", 2)]
    assert cursor.render(at) == "1718000000000-0,1718000000005-3.2"
    assert cursor.parse("1718000000000-0,1718000000005-3.2", 2) == at
    assert [p.cursor() for p in at] == ["1718000000000-0", "1718000000005-2"]
    assert cursor.before("1718000000005-0") == "1718000000004-18446744073709551615"
    assert cursor.parse("0", 3) == [cursor.Position("0-0")] * 3
    for bad in ("1718000000000-0", "abc", "1-2.x", "1-99999999999999999999", "1-0,,"):
        with pytest.raises(ValueError):
            cursor.parse(bad, 2)


# -- the OpenAPI document and the settings ----------------------------------------------------------


def test_the_openapi_document_is_valid_and_lists_every_route(api):
    """OpenAPI 3.1 valid; one operation per route with its scope; anyone may read it."""
    doc = Client().get(f"{API}/openapi.json").json()
    validate(doc)
    assert doc["openapi"] == "3.1.0" and doc["servers"] == [{"url": API}]
    ops = {(method.upper(), path): op for path, item in doc["paths"].items() for method, op in item.items()}
    assert set(ops) == {(r.method, r.openapi_path()) for r in openapi.ALL}
    for route in ROUTES:
        assert ops[route.method, route.openapi_path()]["security"] == [{"bearer": [route.scope]},
                                                                        {"session": [route.scope]}]
    assert set(doc["components"]["schemas"]["Job"]["properties"]) == {f.name for f in dataclasses.fields(Job)}
    assert set(doc["components"]["schemas"]["Options"]["properties"]) == set(options.OPTIONS)


def test_answers_fit_the_document(api):
    """The enqueue answer, a job, the counts and an error validate against the document's schemas."""
    doc = Client().get(f"{API}/openapi.json").json()

    def fits(value, schema: str) -> None:
        jsonschema.validate(value, {"$ref": f"#/components/schemas/{schema}", "components": doc["components"]})

    body = {**ADD, "options": {"group": "g", "priority": 1, "unique_for": 60, "backoff": [1, 5], "after": None}}
    fits(body, "EnqueueRequest")
    made = post(as_("admin"), "/jobs/", body).json()
    fits(made, "Enqueued")
    fits(as_("admin").get(f"{API}/jobs/{made['id']}").json(), "Job")
    fits(as_("admin").get(f"{API}/queues/").json(), "QueueList")
    fits(as_("admin").get(f"{API}/jobs/nope").json(), "Error")


def test_every_job_option_is_taken_or_refused_with_a_reason():
    """A new option of .using() must be given a JSON type here or a reason it is not taken over HTTP."""
    assert set(options.OPTIONS) | set(options.REFUSED) == OPTION_NAMES
    assert not set(options.OPTIONS) & set(options.REFUSED)


def test_the_system_check_reports_malformed_tokens(settings):
    settings.EMQ_API_TOKENS = {"ok": {"token": "x" * 20, "scopes": ["read"]},
                               "short": {"token": "abc", "scopes": ["read"]},
                               "twin": {"token": "x" * 20, "scopes": ["write"], "note": 1}, "bare": "token"}
    found = [e.msg for e in checks.run_checks() if e.id == "emq.E020"]
    assert len(found) == 5, found
    assert any("'short'" in m and "16 characters" in m for m in found)
    assert any("same token as EMQ_API_TOKENS['ok']" in m for m in found)
    assert any("'write'" in m for m in found) and any("unknown keys ['note']" in m for m in found)
    settings.EMQ_API_TOKENS = TOKENS
    assert not [e for e in checks.run_checks() if e.id == "emq.E020"]
