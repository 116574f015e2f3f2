"""Rolling deploys: a job whose name a worker does not know is given back without spending an attempt,
held off a growing delay, until a worker that knows it runs it, or EMQ_UNKNOWN_GRACE passes (then dead as
"unknown job <name>"); a hold never hands out a token twice; emq status and the dashboard name such jobs.
"""

from __future__ import annotations

import io
import json
import signal
import time

import pytest
from django.core import checks
from django.core.management import call_command

from emq.core import keys
from emq.core.engine import Queue
from emq.core.records import Outcome
from emq.core.unknown import unknown_names
from emq.jobs import registry
from emq.runtime import outcomes, runner
from emq.runtime.heartbeat import Heartbeat
from emq.testing import check_invariants, run_until_empty
from tests import jobs, records
from tests.dashboard_fixtures import make_users, page_url, web_as
from tests.deploy_jobs import fresh
from tests.fleet import fleet_for
from tests.procs import server_ms, wait_for

NOT_REGISTERED = f'emq.errors.NotRegistered: no job registered as "{fresh.name}"'


@pytest.fixture
def fleet(emq_env, tmp_path):
    yield from fleet_for(emq_env, tmp_path)


@pytest.fixture
def old_code(monkeypatch):
    """This process runs jobs as an old-code worker would: it does not know ``fresh`` (known again after)."""
    monkeypatch.delitem(registry, fresh.name)
    return monkeypatch


def claim(q: Queue):
    """The one job of the queue, claimed once due (the Pump's tick promotes a held one)."""
    return wait_for(lambda: q.bclaim(1, "w") or (q.tick("p", 5000, 5000) and None), what="the job claimable")[0]


def hold(q: Queue) -> str:
    """Claim the job and run it here, as a worker does; the state finish decided."""
    (state,) = q.finish([runner.execute(q.name, claim(q))])
    return state


def test_holds_spend_no_attempt_and_the_job_completes_once_a_worker_knows_it(emq_env, settings, old_code):
    """A max_attempts=1 job survives several unknown holds, each a scheduled retry without an attempt spent,
    then completes on a worker that knows the name, with one attempt spent."""
    settings.EMQ_UNKNOWN_DELAY = (0.001, 0.001)
    q = Queue("default")
    ref = fresh.enqueue(21)
    for _ in range(4):
        outcome = runner.execute(q.name, claim(q))
        assert q.finish([outcome]) == ["scheduled"] and outcomes.name("scheduled", outcome) == "unknown name"
        job = ref.get()
        assert (job.state, job.attempts, job.max_attempts) == ("scheduled", 0, 1)
        assert job.error.startswith(NOT_REGISTERED)
    old_code.undo()  # the new code is deployed here
    run_until_empty()
    job = ref.get()
    assert (job.state, job.result, job.attempts) == ("completed", 42, 1)
    assert unknown_names(["default"]) == [] and not q.client.exists(q.keys.unknown)
    check_invariants(q)


def test_the_hold_grows_with_the_time_the_name_has_been_unknown(emq_env, settings, old_code):
    """The first hold waits EMQ_UNKNOWN_DELAY's first, later ones about as long as the job has waited so far,
    at most its cap."""
    settings.EMQ_UNKNOWN_DELAY = (0.2, 0.4)
    q = Queue("default")
    ref = fresh.enqueue(1)
    delays = []
    for _ in range(4):
        assert hold(q) == "scheduled"
        delays.append(ref.get().due.timestamp() * 1000 - server_ms(q.client))
    assert 100 < delays[0] <= 200  # the first hold: 0.2 s (less the read's own time)
    assert all(d <= 400 for d in delays) and max(delays[1:]) > 200  # grows, capped at 0.4 s


def test_a_name_unknown_past_the_grace_ends_dead_saying_so(emq_env, settings, old_code, client):
    """Grace counted on the server's clock from the first hold: holds before it, dead as unknown job after."""
    settings.EMQ_UNKNOWN_DELAY = (0.05, 0.05)
    settings.EMQ_UNKNOWN_GRACE = 0.5
    q = Queue("default")
    ref = fresh.enqueue(1)
    first = None
    while True:
        state = hold(q)
        after = server_ms(client)
        first = first or int(records.field(client, q.keys.job(ref.id), "unknown"))
        if state == "dead":
            break
        assert state == "scheduled" and after - first < 2000, "held past its grace"
    assert after - first >= 500, "dead before its grace"
    job = ref.get()
    assert (job.state, job.reason, job.attempts) == ("dead", f"unknown job {fresh.name}", 0)
    assert job.error.startswith(NOT_REGISTERED)
    assert not client.exists(q.keys.unknown)
    check_invariants(q)


def test_no_grace_is_dead_at_once(emq_env, settings, old_code):
    """EMQ_UNKNOWN_GRACE = 0: the first worker that does not know the name ends the job dead, as before."""
    settings.EMQ_UNKNOWN_GRACE = 0
    q = Queue("default")
    ref = fresh.enqueue(1)
    assert hold(q) == "dead"
    assert ref.get().reason == f"unknown job {fresh.name}" and not q.client.exists(q.keys.unknown)


@pytest.mark.parametrize("outcome", ["unknown", "ratelimited", "spared"])
def test_a_token_is_never_handed_out_twice_after_a_hold(emq_env, outcome):
    """DESIGN rule 2 through a hold: the next claim's token is new, and the old holder's extend and finish
    are refused; the hold spent no attempt."""
    q = Queue("default")
    ref = jobs.add.using(max_attempts=1).enqueue(1, 2)
    first = claim(q)
    value = f"600000,0|{NOT_REGISTERED}" if outcome == "unknown" else ""
    assert q.finish([Outcome(ref.id, first.token, outcome, value, 0)]) == ["ready"]
    again = claim(q)
    assert again.token == first.token + 1
    assert q.extend_locks([(ref.id, first.token)], 1000) == ["stale"]
    assert q.finish([Outcome(ref.id, first.token, "completed", "5")]) == ["stale"]
    assert q.finish([Outcome(ref.id, again.token, "completed", "3")]) == ["completed"]
    job = ref.get()
    assert (job.attempts, job.result) == (1, 3)
    check_invariants(q)


def test_a_spared_job_waits_retry_ms_and_keeps_its_retry_budget(emq_env):
    """The general outcome: back scheduled after retry_ms, or ready; failures count only spent attempts, and an
    operator's retry of the dead job gives exactly its budget again."""
    q = Queue("default")
    ref = jobs.add.using(max_attempts=2).enqueue(1, 2)
    c = claim(q)
    assert q.finish([Outcome(c.id, c.token, "spared", "", 60_000)]) == ["scheduled"]
    assert ref.get().due.timestamp() * 1000 - server_ms(q.client) > 55_000
    q.admin.run_now([ref.id])
    for _ in range(3):
        c = claim(q)
        assert q.finish([Outcome(c.id, c.token, "spared", "", 0)]) == ["ready"]
    c = claim(q)
    assert q.finish([Outcome(c.id, c.token, "failed", "RuntimeError: one", 0)]) == ["ready"]  # 1 of 2
    c = claim(q)
    assert q.finish([Outcome(c.id, c.token, "failed", "RuntimeError: two", 0)]) == ["dead"]
    job = ref.get()
    assert job.attempts == 2 and [e["attempt"] for e in job.errors] == [1, 2]
    assert q.admin.retry([ref.id]) == ["ok"]
    for n, end in ((3, "ready"), (4, "dead")):  # a fresh budget of 2, holds or not
        c = claim(q)
        assert q.finish([Outcome(c.id, c.token, "failed", f"RuntimeError: {n}", 0)]) == [end]
    assert ref.get().attempts == 4
    check_invariants(q)


def test_status_names_held_jobs_no_live_worker_knows_and_counts_each_way_out(emq_env, settings, old_code, client):
    """The unknown hash counts held jobs by name; a live worker of the queue that knows the name silences the
    warning; a cancel, a delete, a run by a worker that knows it and a death by grace each count one out."""
    settings.EMQ_UNKNOWN_DELAY = (60.0, 60.0)
    q = Queue("default")
    refs = [fresh.enqueue(i) for i in range(4)]
    for _ in refs:
        (c,) = q.bclaim(1, "w")
        assert q.finish([runner.execute("default", c)]) == ["scheduled"]
    (found,) = unknown_names(["default"])
    assert (found.queue, found.name, found.jobs) == ("default", fresh.name, 4) and 0 <= found.waiting_ms < 10_000
    prefix = emq_env["EMQ_PREFIX"]
    knows = Heartbeat(prefix, "new-worker", lambda: {"queues": ["default"], "jobs": [fresh.name]})
    knows.beat()
    assert unknown_names(["default"]) == []
    client.delete(keys.worker(prefix, "new-worker"))  # its entry expired: it is gone
    Heartbeat(prefix, "elsewhere", lambda: {"queues": ["other"], "jobs": [fresh.name]}).beat()
    assert [u.jobs for u in unknown_names(["default"])] == [4]  # a worker of another queue does not count
    assert q.cancel([refs[0].id]) == ["ok"]
    assert q.admin.delete([refs[1].id]) == ["ok"]
    assert [u.jobs for u in unknown_names(["default"])] == [2]
    old_code.undo()
    q.admin.run_now([refs[2].id])
    assert hold(q) == "completed"
    assert [u.jobs for u in unknown_names(["default"])] == [1]
    old_code.delitem(registry, fresh.name)
    settings.EMQ_UNKNOWN_GRACE = 0
    q.admin.run_now([refs[3].id])
    assert hold(q) == "dead"
    assert unknown_names(["default"]) == [] and not client.exists(q.keys.unknown)
    check_invariants(q)


def test_the_dashboard_overview_warns_of_held_names(emq_env, settings, old_code, db):
    """The overview names the queue, the name and its held jobs above the queues; nothing when none is held."""
    web = web_as(make_users()["viewer"])
    r = web.get(page_url("changelist"))
    assert r.context["unknown"] == [] and b"no live worker knows" not in r.content
    settings.EMQ_UNKNOWN_DELAY = (60.0, 60.0)
    fresh.enqueue(1)
    assert hold(Queue("default")) == "scheduled"
    r = web.get(page_url("changelist"))
    assert [(u.queue, u.name, u.jobs) for u in r.context["unknown"]] == [("default", fresh.name, 1)]
    assert b"Jobs for names no live worker knows" in r.content and fresh.name.encode() in r.content


def test_the_settings_are_checked():
    """A negative grace or a delay that is not (first, cap) with 0 < first <= cap is a system check error."""
    from django.test import override_settings

    with override_settings(EMQ_UNKNOWN_GRACE=-1, EMQ_UNKNOWN_DELAY=(5, 1)):
        ids = {e.id for e in checks.run_checks()}
    assert {"emq.E005", "emq.E006"} <= ids
    assert not {"emq.E005", "emq.E006"} & {e.id for e in checks.run_checks()}


def status() -> tuple[list[dict], str]:
    """``manage.py emq status``: its --json rows and its text."""
    out, text = io.StringIO(), io.StringIO()
    call_command("emq", "status", "--json", stdout=out)
    call_command("emq", "status", stdout=text)
    return json.loads(out.getvalue()), text.getvalue()


@pytest.mark.slow
def test_deploy_drill_a_new_name_waits_for_the_new_worker(emq_env, fleet, client):
    """The acceptance drill, in real processes. An old-code worker (its EMQ_IMPORTS lacks tests.deploy_jobs)
    runs alone while this process, the new web code, mints a job of a name only the new code has (one
    attempt allowed). 30 s later the job is not dead, the old worker has held it again and again (its delay
    capped at 2 s, so it is claimed ~15 times, not once), it spent no attempt, and ``emq status`` names it.
    A new-code worker starts, the old one stops (a rolling deploy), and the job completes."""
    old = fleet.worker("--concurrency", "2", env={"EMQ_UNKNOWN_DELAY": "[0.5, 2.0]"})
    fleet.wait_workers(1)
    q = Queue("default")
    ref = fresh.enqueue(21)
    minted = time.monotonic()
    wait_for(lambda: unknown_names(["default"]), timeout=20, what="the old worker's first hold")
    rows, text = status()
    assert [(u["name"], u["jobs"]) for u in rows[0]["unknown_jobs"]] == [(fresh.name, 1)]
    assert f"warning: queue default holds jobs for names no live worker knows: {fresh.name} (1 job," in text
    while time.monotonic() < minted + 30:
        assert ref.get().state != "dead", "a job of a new name died while only old workers ran"
        time.sleep(0.5)
    # Between two holds (an active job counts its claim in flight as an attempt: read it at rest, as CI once did not).
    job = wait_for(lambda: (j := ref.get()).state != "active" and j, timeout=10, every=0.01, what="the job at rest")
    assert job.state in ("scheduled", "ready") and job.attempts == 0
    assert int(records.field(client, q.keys.job(ref.id), "spared")) >= 8, "the old worker stopped claiming it"
    assert fleet.log(old).count("this worker does not know the name") == 1  # once a minute a name, not a hold
    assert old.poll() is None
    fleet.worker("--concurrency", "2", env={"EMQ_IMPORTS": "tests.jobs,tests.deploy_jobs"})
    fleet.wait_workers(2)
    old.send_signal(signal.SIGTERM)
    assert old.wait(timeout=30) == 0
    job = ref.wait(timeout=20)
    assert (job.state, job.result, job.attempts) == ("completed", 42, 1)
    rows, text = status()
    assert rows[0]["unknown_jobs"] == [] and "warning" not in text
    check_invariants(q)
