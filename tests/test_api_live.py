"""The HTTP API over a live server (tests/live_http.py): the event stream read, left and resumed with
Last-Event-ID without a gap or a repeat, raw header bytes, and every curl command of the HTTP API
guide run as printed, its status and body checked against the answer the page shows."""

from __future__ import annotations

import dataclasses
import http.client
import json
import os
import re
import subprocess
import time
from urllib.parse import urlsplit

import pytest

from emq.jobs import registry
from tests import jobs
from tests.conftest import on_the_cluster
from tests.live_http import serving
from tests.procs import ROOT
from tests.test_api import TOKENS, dead_job
from tests.test_docs_examples import load

GUIDE = ROOT / "docs" / "guides" / "http-api.md"
# A bash block with a curl command, then the answer the page shows: status line, blank line, body.
EXAMPLE = re.compile(r"```bash\n([^`]*)```\s*```http\nHTTP/1\.1 (\d{3}) [^\n]*\n\n([^`]*)```")
COMPARED = ("error", "detail", "state", "queue", "created", "name", "args", "kwargs", "id")
PLACEHOLDER_ID = re.compile(r"^[A-Za-z0-9_.-]+\.[A-Za-z0-9_-]{16}$")  # a generated id shown on the page: any will do
TIME = re.compile(r"^\d{4}-\d\d-\d\dT")  # a time shown on the page (a job's "created"): any time will do


class Stream:
    """A Server-Sent Events client on a raw connection: it reads what it asks for, then may leave."""

    def __init__(self, base: str, queue: str, last_id: str | None = None, token: str = TOKENS["reader"]["token"]):
        url = urlsplit(base)
        self.conn = http.client.HTTPConnection(url.hostname, url.port, timeout=10)
        headers = {"Authorization": f"Bearer {token}", **({"Last-Event-ID": last_id} if last_id else {})}
        self.conn.request("GET", f"/emq/api/events/{queue}", headers=headers)
        self.response = self.conn.getresponse()
        assert self.response.status == 200, self.response.read()
        assert self.response.getheader("Content-Type") == "text/event-stream"
        self.comments: list[str] = []
        self.ended = False
        assert self.response.readline() == b"retry: 1000\n"
        while self.response.readline().strip():  # the opening comment: the stream's position is fixed by now
            pass

    def events(self, n: int | None = None) -> list[tuple[str, dict]]:
        """The next n events as (id, data), or every event until the response ends (n None)."""
        out, event_id, data = [], "", []
        while n is None or len(out) < n or data:
            line = self.response.readline().decode()
            if not line:
                self.ended = True
                return out
            line = line.rstrip("\n")
            if line.startswith(":"):
                self.comments.append(line)
            elif line.startswith("id: "):
                event_id = line[4:]
            elif line.startswith("data: "):
                data.append(line[6:])
            elif not line and data:
                out.append((event_id, json.loads("\n".join(data))))
                data = []
        return out

    def close(self) -> None:
        self.response.close()
        self.conn.close()


def test_a_client_that_leaves_and_comes_back_with_last_event_id_misses_nothing(emq_env, settings):
    """50 jobs minted in one call are one stream entry: the client leaves after 20 of its events; 25 more
    are minted while it is away; back with its last id it gets the other 30 and the 25, each once, and
    a third time, with the id of a whole entry, exactly the 5 minted since. Quiet streams send
    heartbeats and every response ends after EMQ_API_EVENTS_SECONDS."""
    settings.EMQ_API_TOKENS = TOKENS
    settings.EMQ_EVENTS = True
    settings.EMQ_API_EVENTS_SECONDS = 3.0
    settings.EMQ_API_EVENTS_HEARTBEAT = 0.3
    with serving() as base:
        first = Stream(base, "default")
        batch = [ref.id for ref in jobs.add.enqueue_many([((i, i), {}) for i in range(50)])]
        seen = first.events(20)
        first.close()
        assert [(e["kind"], e["id"]) for _, e in seen] == [("minted", i) for i in batch[:20]]
        assert seen[-1][0].endswith(".20"), seen[-1][0]  # inside the entry: 20 of its changes taken
        away = [jobs.add.enqueue(i, i).id for i in range(25)]

        began = time.monotonic()
        second = Stream(base, "default", last_id=seen[-1][0])
        rest = second.events()
        assert second.ended and time.monotonic() - began < 3.0 + 2.0
        assert [e["id"] for _, e in rest] == batch[20:] + away
        assert {e["kind"] for _, e in rest} == {"minted"} and ": keep-alive" in second.comments
        assert "." not in rest[-1][0]  # the last event closes its entry: the id is the stream entry's

        since = [jobs.add.enqueue(i, i).id for i in range(5)]
        third = Stream(base, "default", last_id=rest[-1][0])
        assert [e["id"] for _, e in third.events(5)] == since
        third.close()
    assert len({e["id"] for _, e in seen + rest}) == 75


def test_a_partitioned_queue_streams_every_partition_and_resumes_each(emq_env, settings, request):
    """One stream covers the partitions of a queue, its ids a position in each; resumed, it delivers the
    rest of every partition once. On a cluster (a slot each) it is refused, and each partition streams."""
    settings.EMQ_API_TOKENS = TOKENS
    settings.EMQ_EVENTS = True
    settings.EMQ_PARTITIONS = {"clicks": 3}
    settings.EMQ_API_EVENTS_SECONDS = 1.5
    with serving() as base:
        if on_the_cluster(request):
            url = urlsplit(base)
            conn = http.client.HTTPConnection(url.hostname, url.port, timeout=10)
            auth = {"Authorization": f"Bearer {TOKENS['reader']['token']}"}
            conn.request("GET", "/emq/api/events/clicks", headers=auth)
            assert conn.getresponse().status == 400
            conn.close()
            one = Stream(base, "clicks%230")
            made = jobs.add.using(queue="clicks").enqueue_many([((i, i), {}) for i in range(6)])
            assert {e["id"] for _, e in one.events()} == {r.id for r in made if r.id.endswith("~0")}
            return
        first = Stream(base, "clicks")
        made = {r.id for r in jobs.add.using(queue="clicks").enqueue_many([((i, i), {}) for i in range(12)])}
        seen = first.events(5)
        first.close()
        assert seen[-1][0].count(",") == 2  # a position in each of the 3 partitions
        second = Stream(base, "clicks", last_id=seen[-1][0])
        rest = second.events()
    got = [e["id"] for _, e in seen + rest]
    assert len(got) == len(set(got)) == 12 and set(got) == made
    assert {e["queue"] for _, e in seen + rest} == {"clicks#0", "clicks#1", "clicks#2"}


def test_raw_non_ascii_bytes_in_the_authorization_header_are_a_401(emq_env, settings):
    """A header of UTF-8 bytes (latin-1 to WSGI) is a wrong token like any other, never a 500."""
    settings.EMQ_API_TOKENS = TOKENS
    with serving() as base:
        url = urlsplit(base)
        conn = http.client.HTTPConnection(url.hostname, url.port, timeout=10)
        conn.putrequest("GET", "/emq/api/queues/")
        conn.putheader("Authorization", "Bearer ключ-от-всех-дверей".encode())
        conn.endheaders()
        response = conn.getresponse()
        assert (response.status, json.loads(response.read())["error"]) == (401, "unauthorized")
        conn.close()


def _run(command: str, env: dict[str, str]) -> tuple[str, str, str]:
    """Run a command of the page with its curl answering "<status> <content type>"; the body is kept apart."""
    wrapper = 'curl() { command curl -o "$EMQ_BODY" -w "%{http_code} %{content_type}" "$@"; }\n'
    done = subprocess.run(["bash", "-c", wrapper + command], env=env, capture_output=True, text=True, timeout=60)
    status, _, kind = done.stdout.strip().partition(" ")
    with open(env["EMQ_BODY"], encoding="utf-8") as f:
        return status, kind, f.read()


def _check_body(shown: str, got: str, kind: str, command: str) -> None:
    """The body has the keys the page shows, with the same values for those a reader relies on."""
    if shown.startswith("retry:"):
        assert kind == "text/event-stream" and got.startswith("retry: 1000\n"), got
        return
    expected = json.loads(shown.replace("{…}", "{}").replace('"…"', '""'))  # "…": abridged on the page
    actual = json.loads(got)
    assert set(expected) <= set(actual), (command, sorted(set(expected) - set(actual)))
    for key in COMPARED:
        shown_value = str(expected.get(key))
        if key in expected and not PLACEHOLDER_ID.match(shown_value) and not TIME.match(shown_value):
            assert actual[key] == expected[key], (command, key, actual[key])


@pytest.mark.django_db(transaction=True)
def test_every_curl_example_of_the_guide_answers_as_printed(emq_env, settings, tmp_path, monkeypatch):
    """Each curl command of docs/guides/http-api.md, in page order, against a live server."""
    token = "guide-token-0123456789"
    settings.EMQ_API_TOKENS = {"guide": {"token": token, "scopes": ["read", "enqueue", "control"]}}
    settings.EMQ_EVENTS = True
    settings.EMQ_API_EVENTS_SECONDS = 1.0
    # The page's job, under the name the page gives it (billing/jobs.py), and its dead report-7.
    name = "billing.jobs.send_invoice"
    monkeypatch.setitem(registry, name, dataclasses.replace(load("http_api").send_invoice, name=name))
    dead_job("report-7", queue="default")
    text = GUIDE.read_text()
    examples = EXAMPLE.findall(text)
    assert len(examples) == len([b for b in re.findall(r"```bash\n([^`]*)```", text) if "curl" in b]) >= 12
    with serving() as base:
        env = {**os.environ, "EMQ_API": f"{base}/emq/api", "EMQ_TOKEN": token, "EMQ_BODY": str(tmp_path / "body")}
        for command, status, shown in examples:
            got, kind, body = _run(command, env)
            assert got == status, (command, got, body)
            _check_body(shown.strip(), body, kind, command)
