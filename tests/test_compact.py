"""What the enqueue speed and memory work changed: shorter ids, compact job hashes (fields left out at their
defaults), cheap settings reads."""

from __future__ import annotations

import re

import pytest
from django.test import override_settings

from emq.contrib.tasks.compat import TaskResultStatus
from emq.core import stored
from emq.core.engine import Queue
from emq.core.records import Outcome
from emq.core.scripts import LUA_DIR
from emq.dashboard import lists
from emq.errors import PayloadTooLarge
from emq.testing import check_invariants
from tests import jobs, records, tasks
from tests.dashboard_fixtures import make_user, page_url, web_as


def test_generated_ids_are_distinct_and_as_short_as_24_hex_digits_in_the_default_queue(emq_env):
    """A generated id is its queue and 96 random bits in URL-safe base64 (``emq.core.ids``): in the default
    queue 24 characters, as the 24 hex digits before it and 8 fewer than a uuid4's, in each key and lane."""
    refs = jobs.add.enqueue_many([((i, 0), {}) for i in range(1_000)])
    ids = {r.id.split("~")[0] for r in refs}
    assert len(ids) == 1_000
    assert all(len(i) == 24 and re.fullmatch(r"default\.[A-Za-z0-9_-]{16}", i) for i in ids)


def test_backoff_is_stored_compactly_and_claimed_as_given(emq_env, client):
    """(2.0, 300.0) is stored as "2,300", a fraction exactly, the default (1.0, 300.0) not at all; a claim
    reads each back as given."""
    whole = jobs.add.using(backoff=(2.0, 300.0)).enqueue(1, 2)
    part = jobs.add.using(backoff=(0.25, 7.5)).enqueue(3, 4)
    default = jobs.add.using(backoff=(1.0, 300.0)).enqueue(5, 6)
    q = Queue("default")
    assert records.field(client, q.keys.job(whole.id), "backoff") == "2,300"
    assert records.field(client, q.keys.job(part.id), "backoff") == "0.25,7.5"
    assert records.field(client, q.keys.job(default.id), "backoff") is None
    assert {c.id: c.backoff for c in q.bclaim(3, "w")} == {
        whole.id: (2.0, 300.0), part.id: (0.25, 7.5), default.id: (1.0, 300.0)}


@override_settings(EMQ_RECORD_FORMAT="1")
def test_a_job_with_a_100_byte_argument_stays_packed_on_the_embedded_server(emq_env, client, server_url, embedded_url):
    """The embedded Valkey keeps a job hash a listpack up to 1,024-byte values (default 64): ~half the memory.
    Format 1 only: about the hash layout (format 2's one string is tested in tests/test_record_packed.py)."""
    if server_url != embedded_url:
        pytest.skip("only the embedded server is started with hash-max-listpack-value 1024")
    ref = jobs.add.enqueue("x" * 100, "y")
    assert client.object("encoding", Queue("default").keys.job(ref.id)) == "listpack"


def test_settings_changed_between_two_enqueues_are_seen_at_once(emq_env, settings):
    """Settings are read from Django's settings object on each call: an override applies to the next enqueue,
    a call without arguments included (its size is still checked)."""
    jobs.add.enqueue(1, 2)
    settings.EMQ_MAX_PAYLOAD = 3
    with pytest.raises(PayloadTooLarge):
        jobs.pid.enqueue()
    with pytest.raises(PayloadTooLarge):
        jobs.add.enqueue(1, 2)
    del settings.EMQ_MAX_PAYLOAD
    assert jobs.add.enqueue(1, 2).id


# -- fields left out at their defaults (core/stored.py, put_job in _mint.lua) ----------------------

ALWAYS = {"fn", "group", "state", "lease", "created", "v"}  # what a job minted with every default stores


def test_a_job_minted_with_every_default_stores_only_fn_group_state_lease_created_and_format(emq_env, client):
    """args, kwargs, attempts, max_attempts, max_stalled, backoff, timeout and due are left out while they
    hold their defaults; a value that differs is stored, also one set by a setting (not a default)."""
    q = Queue("default")
    plain = jobs.pid.enqueue()
    assert set(records.fields(client, q.keys.job(plain.id))) == ALWAYS
    given = jobs.add.using(max_attempts=5, backoff=(2, 60), timeout=7, max_stalled=0).enqueue_in(60, 1, b=2)
    h = records.fields(client, q.keys.job(given.id))
    assert set(h) == ALWAYS | {"args", "kwargs", "max_attempts", "max_stalled", "backoff", "timeout", "due"}
    assert (h["args"], h["kwargs"], h["max_attempts"], h["max_stalled"], h["backoff"], h["timeout"]) == (
        "[1]", '{"b":2}', "5", "0", "2,60", "7000,0")
    assert int(h["due"]) - int(h["created"]) == 60_000


def test_a_setting_that_changes_a_default_is_stored_on_each_job(emq_env, client, settings):
    """A default is a constant, not a setting: under EMQ_MAX_ATTEMPTS = 5 each job carries its 5, so it
    keeps it whatever the settings say when it runs."""
    settings.EMQ_MAX_ATTEMPTS = 5
    ref = jobs.pid.enqueue()
    del settings.EMQ_MAX_ATTEMPTS
    assert records.field(client, Queue("default").keys.job(ref.id), "max_attempts") == "5"
    assert Queue("default").get_job(ref.id).max_attempts == 5


def test_the_python_defaults_are_the_scripts_and_what_default_settings_send(emq_env):
    """core/stored.py's format and tables of defaults are _defaults.lua's (FORMAT, DEFAULT, DEFAULTS), and a
    plain job under the default settings sends exactly the current format's values (so the mint leaves them out)."""
    source = (LUA_DIR / "_defaults.lua").read_text()
    assert re.search(r"^local FORMAT = '(\w+)'$", source, re.M).group(1) == stored.FORMAT
    table = re.search(r"local DEFAULT = \{(.*?)\}\n", source, re.S).group(1)
    assert dict(re.findall(r"(\w+) = '([^']*)'", table)) == stored.DEFAULTS[stored.FORMAT]
    # Formats 0, 1 and 2 (packed) share one table, in the scripts as here; one that changes a default needs its own.
    assert "DEFAULTS = {['0'] = DEFAULT, [FORMAT] = DEFAULT, ['2'] = DEFAULT}" in source
    assert set(stored.DEFAULTS) == {"0", stored.FORMAT, "2"}
    assert stored.DEFAULTS["0"] == stored.DEFAULTS[stored.FORMAT] == stored.DEFAULTS["2"]
    row = dict(zip(stored.MINT_FIELDS, map(str, stored.mint_row(jobs.pid.spec((), {}, ""))), strict=True))
    sent = {k: row[k] for k in ("args", "kwargs", "max_attempts", "max_stalled", "backoff", "timeout")}
    assert sent == {k: v for k, v in stored.DEFAULTS[stored.FORMAT].items() if k != "attempts"}


def test_mint_rows_have_the_fields_the_scripts_read_in_their_order():
    """stored.MINT_FIELDS is mint.lua's row: its length is JOB_FIELDS, and put_job's optional fields sit
    at the offsets OPTIONAL names (1-based after the row's start)."""
    source = (LUA_DIR / "_mint.lua").read_text()
    assert int(re.search(r"^local JOB_FIELDS = (\d+)$", source, re.M).group(1)) == len(stored.MINT_FIELDS)
    optional = re.search(r"^local OPTIONAL = \{(.*?)\}$", source, re.M).group(1)
    for name, offset in re.findall(r"'(\w+)', (\d+)", optional):
        assert stored.MINT_FIELDS[int(offset) - 1] == name


@pytest.fixture
def viewer(db):
    return make_user("viewer", perms=("view_dashboard",))


def test_a_default_job_reads_back_its_defaults_everywhere(emq_env, client, viewer, django_capture_on_commit_callbacks):
    """The engine's record, the claim, the dashboard's job page and ready list, and the tasks backend
    read a left-out field as its default (due as created), never as None or 0."""
    q = Queue("default")
    ref = jobs.pid.enqueue()
    job = q.get_job(ref.id)
    assert (job.args, job.kwargs, job.attempts, job.max_attempts, job.due) == ([], {}, 0, 3, job.created)
    page = web_as(viewer).get(page_url("job", queue="default", id=ref.id))
    shown = {name: value for name, _, value in page.context["described"]}
    created = shown["created"]
    assert {k: shown[k] for k in ("attempts", "max_attempts", "max_stalled", "due")} == {
        "attempts": "0", "max_attempts": "3", "max_stalled": "1", "due": created}
    assert shown["backoff"][1] == "1,300" and shown["time limit"] == ("1 h", "3600000,0")  # in words, stored
    assert (shown["args"], shown["kwargs"]) == ("[]", "{}")
    (row,) = lists.ready("default", "_").slice.rows
    assert (row.fields["attempts"], row.fields["max_attempts"], row.score) == ("0", "3", int(created))
    (c,) = q.bclaim(1, "w")
    assert (c.args, c.kwargs, c.max_attempts, c.backoff, c.due_ms, c.timeout_ms) == (
        [], {}, 3, (1.0, 300.0), int(created), 3_600_000)
    with django_capture_on_commit_callbacks(execute=True):  # the test's transaction never commits
        task = tasks.calculate_meaning_of_life.enqueue()
    assert set(records.fields(client, q.keys.job(task.id))) == ALWAYS | {"meta"}
    got = tasks.calculate_meaning_of_life.get_result(task.id)
    assert (got.args, got.kwargs, got.attempts, got.status) == ([], {}, 0, TaskResultStatus.READY)


def test_a_default_job_is_retried_until_its_default_attempts_then_dead(emq_env):
    """No max_attempts stored: finish reads 3, so the third failure is final."""
    q = Queue("default")
    jobs.pid.enqueue()
    states = []
    for _ in range(3):
        (c,) = q.bclaim(1, "w")
        states += q.finish([Outcome(c.id, c.token, "failed", "boom", 0)])
    assert states == ["ready", "ready", "dead"]
    check_invariants(q)


# Every field a job of the earlier layout stored, at its default (max_attempts and backoff differ below).
OLD_LAYOUT = {"args": "[]", "kwargs": "{}", "attempts": "0", "max_stalled": "1", "timeout": "3600000,0"}


def test_a_job_of_the_earlier_layout_claims_retries_and_finishes_by_its_own_fields(emq_env, client):
    """A job minted with every field written (a queue upgraded in place) is read from them: its
    max_attempts 2 and its zero backoff and time limit, not the defaults; it completes or dies as before.
    (Under format 2 the record written back is a hash, as a job of the earlier layout is.)"""
    q = Queue("default")
    refs = [jobs.pid.enqueue() for _ in range(2)]
    for ref in refs:
        key = q.keys.job(ref.id)
        records.spoil(client, key, {**OLD_LAYOUT, "max_attempts": "2", "backoff": "0,0", "timeout": "5000,0",
                                    "due": records.field(client, key, "created")})
    claimed = q.bclaim(2, "w")
    assert [(c.max_attempts, c.backoff, c.timeout_ms, c.token) for c in claimed] == [(2, (0.0, 0.0), 5000, 1)] * 2
    done, failing = claimed
    assert q.finish([Outcome(done.id, 1, "completed", "7"), Outcome(failing.id, 1, "failed", "boom", 0)]) == [
        "completed", "ready"]
    (again,) = q.bclaim(1, "w")
    assert (again.id, again.token) == (failing.id, 2)
    assert q.finish([Outcome(failing.id, 2, "failed", "boom", 0)]) == ["dead"]
    assert (q.get_job(done.id).result, q.get_job(failing.id).attempts) == (7, 2)
    check_invariants(q)


# -- the stored job's format (core/stored.py) -----------------------------------------------------


def test_every_new_job_carries_the_current_format(emq_env, client, settings):
    """One by one, in bulk, unique, scheduled and in a flow: each record stores the format written, v =
    stored.FORMAT for a hash, "2" under EMQ_RECORD_FORMAT = "2" (a packed record)."""
    q = Queue("default")
    refs = [jobs.pid.enqueue(), jobs.pid.enqueue_in(60), jobs.pid.using(unique_for=60).enqueue(),
            *jobs.pid.enqueue_many([((), {})] * 3), jobs.pid.using(after=[jobs.pid.enqueue()]).enqueue()]
    written = stored.FORMAT if settings.EMQ_RECORD_FORMAT == "1" else "2"
    assert {records.field(client, q.keys.job(r.id), "v") for r in refs} == {written}


def test_a_job_of_v0_2_0_without_a_format_reads_by_format_0(emq_env, client):
    """A hash with no v (written by v0.2.0) takes format 0's defaults in every reader: the record, a claim,
    a failure's retry rule. (Under format 2 the record dropping its v becomes a hash: v0.2.0 wrote hashes.)"""
    q = Queue("default")
    ref = jobs.pid.enqueue()
    records.spoil(client, q.keys.job(ref.id), drop=("v",))
    job = q.get_job(ref.id)
    assert (job.args, job.kwargs, job.attempts, job.max_attempts) == ([], {}, 0, 3)
    states = []
    for _ in range(3):
        (c,) = q.bclaim(1, "w")
        assert (c.max_attempts, c.backoff, c.timeout_ms) == (3, (1.0, 300.0), 3_600_000)
        states += q.finish([Outcome(c.id, c.token, "failed", "boom", 0)])
    assert states == ["ready", "ready", "dead"]


def test_a_reader_takes_left_out_fields_from_the_defaults_of_the_jobs_own_format(emq_env, client, monkeypatch):
    """Were a later format to change a default, a job of each format reads with its own table, and a format
    the reader does not know with the newest it knows (the rules in core/stored.py). The later format is a
    made-up "3": "2" is a real one (packed), which the current job is under EMQ_RECORD_FORMAT = "2"."""
    later = {**stored.DEFAULTS[stored.FORMAT], "max_attempts": "5"}
    monkeypatch.setitem(stored.DEFAULTS, "3", later)
    q = Queue("default")
    current, changed, unknown = (jobs.pid.enqueue() for _ in range(3))
    records.spoil(client, q.keys.job(changed.id), {"v": "3"})
    records.spoil(client, q.keys.job(unknown.id), {"v": "99"})
    assert [q.get_job(r.id).max_attempts for r in (current, changed, unknown)] == [3, 5, 3]
    assert stored.answer(["max_attempts"], [None, "3"]) == {"max_attempts": "5"}
