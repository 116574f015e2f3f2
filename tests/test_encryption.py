"""Encryption at rest: an encrypted job's arguments, result, error and progress note never reach the server
in plaintext; it runs, reads back opened, dedupes, chains; ``rekey`` moves it to a new key while workers
run; a job whose key is gone ends dead as "cannot decrypt" and harms no other job."""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import os
import re
import threading
import time

import pytest
from cryptography.fernet import Fernet
from django.core.management import CommandError, call_command
from django.test import Client, override_settings

import emq
from emq.checks import check_encryption
from emq.core import config, encrypted, sealed, stored
from emq.core.connection import get_client
from emq.core.engine import Queue
from emq.core.logical import LogicalQueue
from emq.runtime import runner
from emq.testing import run_until_empty
from tests import jobs, tasks
from tests.dashboard_fixtures import make_users, page_url, web_as
from tests.procs import wait_for
from tests.test_docs_examples import load

OLD, NEW = Fernet.generate_key().decode(), Fernet.generate_key().decode()
CARD = "4111-1111-1111-1111"  # what must never be readable in the server


@emq.job(encrypt=True)
def charge(card, amount, note=""):
    return {"card": card, "charged": amount}


@emq.job(encrypt=True, max_attempts=1)
def declined(card):
    raise ValueError(f"card {card} declined")


@emq.job(encrypt=True, takes_context=True)
def reports(ctx, card):
    ctx.progress(0.5, f"charging {card}")
    time.sleep(0.3)  # the worker writes it meanwhile (a note reported just before returning may be lost: main's race)
    return card


@emq.job
def plain(x):
    return x


def _charge_noted(card, path):
    with open(path, "a") as f:
        f.write("charged\n")
    return {"card": card, "charged": 5}


@emq.job(encrypt=True, takes_context=True, max_attempts=1)
def charged_in_steps(ctx, card, path):
    paid = ctx.step("charge", _charge_noted, card, path)
    ctx.sleep(5.5)  # past run_until_empty's 5 s: the test's first run leaves it asleep
    return paid


@pytest.fixture
def keys(settings, emq_env):
    settings.EMQ_ENCRYPTION_KEYS = [OLD]
    return settings


def emq_prefix() -> str:
    return config.get("EMQ_PREFIX")


def raw(queue: str, job_id: str) -> dict[str, str]:
    """What anyone who reads the server sees of a job: its fields as stored (a hash, or a packed record)."""
    q = Queue(queue)
    return stored.read_all_raw(get_client(), [q.keys.job(job_id)])[0]


def no_plaintext(h: dict[str, str], *secrets: str) -> None:
    """None of secrets is readable in a stored job outside its sealed values: a short secret ("ada") may turn
    up by chance inside a ciphertext's base64, which is not a leak (it failed a CI run once)."""
    text = re.sub(re.escape(sealed.MARK) + r"[A-Za-z0-9_\-=]+", "", json.dumps(h))
    for secret in secrets:
        assert secret not in text, f"{secret!r} is readable in the stored job: {h}"


def test_hgetall_of_an_encrypted_job_shows_no_argument_or_result(keys):
    ref = charge.enqueue(CARD, 42, note="vip")
    h = raw("default", ref.id)
    no_plaintext(h, CARD, "vip")
    assert h["kwargs"].startswith(sealed.MARK) and h.get("args", "[]") == "[]"
    assert h["fn"] == charge.name and h["state"] == "ready"  # what the scripts work with stays plain
    run_until_empty()
    h = raw("default", ref.id)
    assert h["state"] == "completed"
    no_plaintext(h, CARD, "vip", "charged")
    job = emq.get_job(ref.id)
    assert job.encrypted and job.args == [CARD, 42] and job.kwargs == {"note": "vip"}
    assert job.result == {"card": CARD, "charged": 42}


def test_an_error_text_is_sealed_too(keys):
    ref = declined.enqueue(CARD)
    run_until_empty()
    h = raw("default", ref.id)
    assert h["state"] == "dead" and h["reason"] == "failed"
    no_plaintext(h, CARD)
    job = emq.get_job(ref.id)
    assert job.error.startswith(f"ValueError: card {CARD} declined")
    assert job.errors[-1]["error"] == f"ValueError: card {CARD} declined"


def test_a_plain_job_is_stored_as_before(keys):
    ref = plain.enqueue(CARD)
    assert json.loads(raw("default", ref.id)["args"]) == [CARD]
    assert not emq.get_job(ref.id).encrypted


def test_a_job_whose_key_is_gone_ends_dead_cannot_decrypt_and_harms_no_other(keys):
    lost = charge.enqueue(CARD, 1)
    keys.EMQ_ENCRYPTION_KEYS = [NEW]  # the key it was sealed with removed
    fine = charge.enqueue(CARD, 2)
    other = plain.enqueue(3)
    run_until_empty()
    job = emq.get_job(lost.id)
    assert (job.state, job.reason) == ("dead", "cannot decrypt")
    assert job.args == encrypted.ENCRYPTED and job.encrypted
    assert emq.get_job(fine.id).result == {"card": CARD, "charged": 2}
    assert emq.get_job(other.id).result == 3


@emq.job(encrypt=True, max_attempts=1)
def fails_once(card, path):
    """Dead on its first run (it leaves path behind), completed when retried."""
    if not os.path.exists(path):
        open(path, "w").close()
        raise RuntimeError(f"first try for {card}")
    return card


def rekey(*args: str) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command("emq", "rekey", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_after_rekey_with_the_old_key_removed_stored_jobs_still_run(keys, tmp_path):
    """Jobs of every state sealed with OLD: rekey under [NEW, OLD], then OLD removed, and each still runs."""
    dead = fails_once.enqueue(CARD, str(tmp_path / "once"))
    done = charge.enqueue(CARD, 1)
    run_until_empty()
    assert emq.get_job(dead.id).state == "dead" and emq.get_job(done.id).state == "completed"
    ready = charge.enqueue(CARD, 2)
    scheduled = charge.enqueue_in(1.5, CARD, 3)
    keys.EMQ_ENCRYPTION_KEYS = [NEW, OLD]
    out, err = rekey("--dry-run")
    assert "would rewrite 4 job(s)" in err
    out, err = rekey()
    assert "rewrote 4 job(s)" in err and "default: 4 job(s) read" in err
    keys.EMQ_ENCRYPTION_KEYS = [NEW]  # OLD is gone: everything must open with NEW alone
    assert emq.get_job(done.id).result == {"card": CARD, "charged": 1}
    assert emq.get_job(dead.id).error.startswith(f"RuntimeError: first try for {CARD}")
    assert Queue("default").admin.retry([dead.id]) == ["ok"]
    run_until_empty()  # waits for the scheduled one too (due within 5 s)
    assert emq.get_job(ready.id).result == {"card": CARD, "charged": 2}
    assert emq.get_job(scheduled.id).result == {"card": CARD, "charged": 3}
    assert (emq.get_job(dead.id).state, emq.get_job(dead.id).result) == ("completed", CARD)
    for ref in (dead, done, ready, scheduled):
        no_plaintext(raw("default", ref.id), CARD)
    _, again = rekey()  # idempotent: nothing left to rewrite
    assert "rewrote 0 job(s)" in again


def test_a_durable_jobs_step_results_are_sealed_and_survive_a_rekey(keys, tmp_path):
    """An encrypted job's step result is stored sealed like its result; the job sleeps, rekey runs and the old
    key goes: it wakes, its step returns the kept result without running again, and readers see it opened."""
    notes = tmp_path / "charges"
    ref = charged_in_steps.enqueue(CARD, str(notes))
    run_until_empty()  # the step, then the sleep: the job is scheduled
    assert emq.get_job(ref.id).state == "scheduled"
    stored = raw("default", ref.id)
    assert [f for f in stored if f.startswith("@s:")] == ["@s:charge"]
    no_plaintext(stored, CARD)
    keys.EMQ_ENCRYPTION_KEYS = [NEW, OLD]
    _, err = rekey()
    assert "rewrote 1 job(s)" in err
    keys.EMQ_ENCRYPTION_KEYS = [NEW]
    wait_for(lambda: run_until_empty() or emq.get_job(ref.id).state == "completed", timeout=20, what="the job awake")
    job = emq.get_job(ref.id)
    assert (job.state, job.result) == ("completed", {"card": CARD, "charged": 5})
    assert notes.read_text() == "charged\n"  # the step ran once
    assert job.steps[0].result == {"card": CARD, "charged": 5}
    no_plaintext(raw("default", ref.id), CARD)
    keys.EMQ_ENCRYPTION_KEYS = [OLD]  # a reader without the key: the step shows "encrypted", nothing raises
    assert emq.get_job(ref.id).steps[0].result == encrypted.ENCRYPTED


@emq.job(encrypt=True, max_attempts=1)
def charged_through_current_job(card):
    """No context parameter: its durable calls go through emq.current_job()."""
    return emq.current_job().step("charge", lambda: {"card": card})


def test_a_step_taken_through_current_job_is_sealed_too(keys):
    """A job that reaches its context through current_job() gets the same one as a takes_context job: its
    step's result is sealed like its own result."""
    ref = charged_through_current_job.enqueue(CARD)
    run_until_empty()
    assert emq.get_job(ref.id).result == {"card": CARD}
    stored = raw("default", ref.id)
    assert "@s:charge" in stored
    no_plaintext(stored, CARD)


APPROVER = "ops-7@bank.example"  # a signal's payload: as secret as the job's arguments


@emq.job(encrypt=True, takes_context=True, max_attempts=1)
def charged_when_approved(ctx, card):
    approval = ctx.wait_for("approval", timeout=600)
    return {"card": card, "by": approval["by"]}


def test_a_signal_to_an_encrypted_job_is_stored_sealed_and_survives_a_rekey(keys):
    """emq.signal's payload to an encrypted job is sealed before it leaves the sender; rekey seals it anew, and
    with only the new key the job takes it opened."""
    ref = charged_when_approved.enqueue(CARD)
    run_until_empty()
    assert emq.get_job(ref.id).state == "waiting"
    assert emq.signal(ref.id, "approval", {"by": APPROVER})
    no_plaintext(raw("default", ref.id), CARD, APPROVER)
    keys.EMQ_ENCRYPTION_KEYS = [NEW, OLD]
    _, err = rekey()
    assert "rewrote 1 job(s)" in err
    keys.EMQ_ENCRYPTION_KEYS = [NEW]
    run_until_empty()
    job = emq.get_job(ref.id)
    assert (job.state, job.result) == ("completed", {"card": CARD, "by": APPROVER})
    assert [(s.kind, s.result) for s in job.steps] == [("signal", {"by": APPROVER})]
    no_plaintext(raw("default", ref.id), CARD, APPROVER)


def test_a_signal_to_a_plain_job_stays_plain(emq_env):
    """Only an encrypted job's payloads are sealed: a plain job's journal reads as it was sent."""
    ref = waits_for_approval.enqueue()
    run_until_empty()
    assert emq.signal(ref.id, "approval", {"by": APPROVER})
    assert APPROVER in raw("default", ref.id)["@w:approval"]


@emq.job(takes_context=True, max_attempts=1)
def waits_for_approval(ctx):
    return ctx.wait_for("approval", timeout=600)


@emq.job(encrypt=True, takes_context=True)
def charges_by_children(ctx, cards):
    for card in cards:
        ctx.spawn(charge, card, 1)
    return [r["card"] for r in ctx.wait_children()]


def test_a_parent_gets_its_encrypted_childrens_results_opened_and_keeps_them_sealed(keys):
    ref = charges_by_children.enqueue([CARD, "5500-0000-0000-0004"])
    run_until_empty()
    job = emq.get_job(ref.id)
    assert (job.state, job.result) == ("completed", [CARD, "5500-0000-0000-0004"])
    no_plaintext(raw("default", ref.id), CARD, "5500-0000-0000-0004")


def test_rekey_writes_a_field_only_while_it_holds_what_was_read(keys):
    """A job a worker changed between rekey's read and its write keeps what the worker wrote."""
    ref = charge.enqueue(CARD, 1)
    q = Queue("default")
    before = raw("default", ref.id)["kwargs"]
    assert q.crypto._write([ref.id, "kwargs", "not what it holds", "x"]) == 1  # refused: moved on
    assert q.crypto._write(["gone", "kwargs", "a", "b"]) == 1
    assert raw("default", ref.id)["kwargs"] == before


def test_rekey_exits_1_while_a_job_no_key_opens_is_stored(keys):
    charge.enqueue(CARD, 1)
    keys.EMQ_ENCRYPTION_KEYS = [NEW]
    with pytest.raises(CommandError, match="1 encrypted job"):
        rekey()


def test_rekey_while_workers_run_loses_nothing(keys):
    """Rekey in chunks while a worker drains: every job completes and reads back under NEW alone."""
    refs = charge.enqueue_many([((CARD, i), {}) for i in range(300)])
    keys.EMQ_ENCRYPTION_KEYS = [NEW, OLD]
    worker = threading.Thread(target=run_until_empty)
    worker.start()
    for q in LogicalQueue("default").partitions:
        q.crypto.rekey(chunk=50)
    worker.join(60)
    for q in LogicalQueue("default").partitions:
        q.crypto.rekey(chunk=50)  # what workers still sealed with OLD meanwhile (none: they seal with NEW)
    keys.EMQ_ENCRYPTION_KEYS = [NEW]
    assert [emq.get_job(r.id).result for r in refs] == [{"card": CARD, "charged": i} for i in range(300)]


def test_a_progress_note_is_sealed_and_reads_back(keys):
    ref = reports.enqueue(CARD)
    run_until_empty()
    h = raw("default", ref.id)
    assert h["progress_note"].startswith(sealed.MARK)
    no_plaintext(h, CARD)
    job = emq.get_job(ref.id)
    assert (job.progress, job.progress_note, job.result) == (0.5, f"charging {CARD}", CARD)


def test_unique_encrypted_jobs_still_dedupe_without_a_plain_hash_of_their_arguments(keys):
    first = charge.using(unique_for=60).enqueue(CARD, 1)
    again = charge.using(unique_for=60).enqueue(CARD, 1)
    other = charge.using(unique_for=60).enqueue(CARD, 2)
    assert first.created and (again.id, again.created) == (first.id, False) and other.id != first.id
    canonical = json.dumps([[CARD, 1], {}], sort_keys=True, separators=(",", ":"))
    plain_hash = hashlib.sha1(canonical.encode()).hexdigest()  # what a plain job's unique key holds
    stored_keys = [k for k in get_client().scan_iter(match=f"{emq_prefix()}*", count=1000)]
    assert not [k for k in stored_keys if plain_hash in k], "a plain hash lets anyone check a guess of the arguments"
    assert json.dumps(raw("default", first.id)).count(plain_hash) == 0


def test_enqueue_many_and_eager_mode_encrypt_too(keys, settings):
    refs = charge.enqueue_many([((CARD, i), {"note": f"n{i}"}) for i in range(5)])
    for ref in refs:
        no_plaintext(raw("default", ref.id), CARD)
    run_until_empty()
    assert [emq.get_job(r.id).result["charged"] for r in refs] == list(range(5))
    settings.EMQ_EAGER = True
    assert charge.enqueue(CARD, 7) is not None  # runs inline through the cipher's round trip


def test_emq_encrypt_encrypts_every_job_and_using_turns_it_off(keys, settings):
    settings.EMQ_ENCRYPT = True
    sealed_ref = plain.enqueue(CARD)
    settings.EMQ_ENCRYPT = False
    assert raw("default", sealed_ref.id)["kwargs"].startswith(sealed.MARK)
    assert json.loads(raw("default", plain.using(encrypt=False).enqueue(CARD).id)["args"]) == [CARD]
    assert raw("default", plain.using(encrypt=True).enqueue(CARD).id)["kwargs"].startswith(sealed.MARK)
    run_until_empty()
    assert emq.get_job(sealed_ref.id).result == CARD


def test_a_chain_step_given_an_encrypted_result_is_encrypted_too(keys):
    ref = emq.chain(charge.s(CARD, 5), plain.s())
    run_until_empty()
    last = emq.get_job(ref.id)
    assert last.encrypted and last.result == {"card": CARD, "charged": 5}
    no_plaintext(raw("default", ref.id), CARD)


def test_a_chord_callback_given_encrypted_results_is_encrypted_too(keys):
    ref = emq.chord([charge.s(CARD, 5), charge.s("5500-0000-0000-0004", 6)], plain.s())
    run_until_empty()
    callback = emq.get_job(ref.callbacks["callback"].id)
    assert callback.encrypted and callback.state == "completed"
    assert [r["card"] for r in callback.result] == [CARD, "5500-0000-0000-0004"]
    no_plaintext(raw("default", callback.id), CARD, "5500-0000-0000-0004")


def test_the_tasks_backend_encrypts_with_its_options(keys):
    with override_settings(TASKS={"default": {"BACKEND": "emq.backends.EmqBackend", "QUEUES": ["default"],
                                              "OPTIONS": {"encrypt": True}}}):
        result = tasks.add.enqueue(CARD, "-x")
        no_plaintext(raw("default", result.id), CARD)
        run_until_empty()
        back = tasks.add.get_result(result.id)
        assert (back.args, back.return_value) == ([CARD, "-x"], CARD + "-x")
        no_plaintext(raw("default", result.id), CARD)


def test_without_keys_an_encrypted_enqueue_is_refused_saying_what_to_do(settings, emq_env):
    settings.EMQ_ENCRYPTION_KEYS = []
    with pytest.raises(emq.ConfigurationError, match="EMQ_ENCRYPTION_KEYS is empty.*generate_key"):
        charge.enqueue(CARD, 1)
    with pytest.raises(emq.ConfigurationError, match="encrypt of .* must be True or False"):
        plain.using(encrypt="yes")


def test_the_system_check_names_bad_keys_and_emq_encrypt_without_keys(settings):
    settings.EMQ_ENCRYPTION_KEYS = [OLD, "not-a-key"]
    found = {(e.id, e.msg) for e in check_encryption()}
    assert found == {("emq.E030", "EMQ_ENCRYPTION_KEYS[1] is not a Fernet key (32 url-safe base64-encoded bytes); "
                                  "make one with cryptography.fernet.Fernet.generate_key()")}
    settings.EMQ_ENCRYPTION_KEYS, settings.EMQ_ENCRYPT = [], True
    assert [e.id for e in check_encryption()] == ["emq.E031"]
    settings.EMQ_ENCRYPTION_KEYS = [NEW, OLD]
    assert check_encryption() == []


# -- who sees what: the dashboard, the API, the command line ------------------------------------------------


@pytest.fixture
def shown(keys, db):
    """An encrypted login job (a secret password among its arguments) that failed quoting its arguments."""
    keys.EMQ_API_TOKENS = {"reader": {"token": "reader-token-0123456789", "scopes": ["read"]}}
    ref = jobs.login.using(encrypt=True).enqueue("ada", "hunter2", api_token="tok-123456")
    q = Queue("default")
    (c,) = q.bclaim(1, "w")
    (failure,) = [o for o in [runner.failed(c, PermissionError("bad password hunter2 for ada"))]]
    q.finish([dataclasses.replace(failure, outcome="dead")])
    no_plaintext(raw("default", ref.id), "ada", "hunter2", "tok-123456")
    return ref.id, make_users()


def surfaces(job_id: str, users: dict) -> dict[str, str]:
    """What each reader is shown of the job: the dashboard's pages, the API's answer, ``emq show``."""
    web = web_as(users["viewer"])
    out = {name: web.get(page_url(name, queue="default", **({"id": job_id} if name == "job" else {})))
           .content.decode() for name in ("job", "dead")}
    api = Client(HTTP_AUTHORIZATION="Bearer reader-token-0123456789").get(f"/emq/api/jobs/{job_id}")
    assert api.status_code == 200
    out["api"] = api.content.decode()
    cli = io.StringIO()
    call_command("emq", "show", job_id, "--json", stdout=cli)
    out["cli"] = cli.getvalue()
    return out


def test_the_http_api_enqueues_encrypted_on_request(keys):
    keys.EMQ_API_TOKENS = {"bot": {"token": "enqueue-token-0123456789", "scopes": ["enqueue"]}}
    bot = Client(HTTP_AUTHORIZATION="Bearer enqueue-token-0123456789")
    r = bot.post("/emq/api/jobs/", json.dumps({"name": "tests.jobs.add", "args": [CARD, "!"],
                                               "options": {"encrypt": True}}), content_type="application/json")
    assert r.status_code == 201, r.content
    no_plaintext(raw("default", r.json()["id"]), CARD)
    refused = bot.post("/emq/api/jobs/", json.dumps({"name": "tests.jobs.add", "args": [1, 2],
                                                     "options": {"encrypt": "yes"}}), content_type="application/json")
    assert refused.status_code == 400 and "true or false" in refused.json()["detail"]


def test_readers_see_opened_values_masked_as_ever(shown):
    """The dashboard and the API mask secrets as for a plain job; ``emq show`` is the operator's, who holds
    the keys: it shows every value opened, as it shows a plain job's."""
    job_id, users = shown
    seen = surfaces(job_id, users)
    for where, text in seen.items():
        assert "ada" in text, f"the opened arguments are not shown by {where}"
        assert sealed.MARK not in text, f"ciphertext shown by {where}"
        for secret in ("hunter2", "tok-123456"):
            assert (secret in text) == (where == "cli"), f"{secret} {where}"
    assert json.loads(seen["cli"])["encrypted"] is True


def test_without_its_key_a_job_shows_encrypted_and_every_page_answers(shown, settings):
    job_id, users = shown
    settings.EMQ_ENCRYPTION_KEYS = [NEW]
    for where, text in surfaces(job_id, users).items():
        assert "encrypted" in text and "ada" not in text, where
        assert sealed.MARK not in text, f"ciphertext shown by {where}"


def test_the_security_guide_example_runs(keys):
    """docs/guides/security.md's example, as printed."""
    load("security").example()


def test_results_a_flow_puts_in_front_are_opened_one_by_one_or_in_a_list(settings):
    """A chain step gets its parent's sealed result first, a chord's callback a list of them: opened alike."""
    settings.EMQ_ENCRYPTION_KEYS = [OLD]
    args, kwargs = encrypted.seal_call('["own"]', '{"k":1}')
    one, two = (encrypted.seal_result(json.dumps(v)) for v in ({"a": 1}, [2]))
    front = f"[{one},[{two},3],4]"  # what _flow.lua writes: the parents' results, then the call's "[]"
    assert encrypted.open_call(front, kwargs) == ([{"a": 1}, [[2], 3], 4, "own"], {"k": 1})
