"""Flow control, part one: unique jobs (unique_for, unique_key, unique_until) and debounce."""

from __future__ import annotations

import threading
import time

import pytest

import emq
from emq.core.connection import get_client
from emq.core.engine import Queue
from emq.testing import run_until_empty
from tests import jobs, records
from tests.procs import server_ms, wait_for


def finish_all(q: Queue) -> None:
    claims = q.bclaim(100, "w")
    q.finish([emq_outcome(c) for c in claims])


def emq_outcome(c):
    from emq.core.records import Outcome

    return Outcome(c.id, c.token, "completed", "null", 0)


def test_a_second_enqueue_in_the_window_returns_the_first_job(emq_env):
    first = jobs.add.using(unique_for=60).enqueue(1, 2)
    second = jobs.add.using(unique_for=60).enqueue(1, 2)
    assert first.created and not second.created
    assert second.id == first.id
    other = jobs.add.using(unique_for=60).enqueue(2, 2)  # other args: another key
    assert other.created and other.id != first.id
    assert Queue("default").counts().ready == 2


def test_the_key_frees_when_the_job_finishes(emq_env):
    first = jobs.add.using(unique_for=60).enqueue(1, 2)
    finish_all(Queue("default"))
    third = jobs.add.using(unique_for=60).enqueue(1, 2)
    assert third.created and third.id != first.id


def test_until_start_frees_the_key_when_a_worker_claims_it(emq_env):
    q = Queue("default")
    first = jobs.add.using(unique_for=60, unique_until="start").enqueue(1, 2)
    assert not jobs.add.using(unique_for=60, unique_until="start").enqueue(1, 2).created
    [claimed] = q.bclaim(10, "w")
    assert claimed.id == first.id
    again = jobs.add.using(unique_for=60, unique_until="start").enqueue(1, 2)
    assert again.created and again.id != first.id


def test_the_window_ends_on_the_server_clock(emq_env):
    first = jobs.add.using(unique_for=0.3).enqueue(1, 2)  # never finishes: the window alone frees it
    later = wait_for(lambda: (r := jobs.add.using(unique_for=0.3).enqueue(1, 2)).created and r, timeout=5)
    assert later.id != first.id


def test_an_explicit_unique_key_and_canonical_kwargs(emq_env):
    a = jobs.add.using(unique_for=60, unique_key="sum:1").enqueue(1, 2)
    b = jobs.add.using(unique_for=60, unique_key="sum:1").enqueue(5, 5)
    assert (b.id, b.created) == (a.id, False)
    c = jobs.add.using(unique_for=60).enqueue(a=1, b=2)
    d = jobs.add.using(unique_for=60).enqueue(b=2, a=1)
    assert (d.id, d.created) == (c.id, False)


def test_enqueue_many_honours_it_per_item(emq_env):
    refs = jobs.add.using(unique_for=60).enqueue_many([((1, 1), {}), ((2, 2), {}), ((1, 1), {})])
    assert [r.created for r in refs] == [True, True, False]
    assert refs[2].id == refs[0].id
    assert Queue("default").counts().ready == 2


def test_bad_options_are_refused():
    with pytest.raises(emq.ConfigurationError):
        jobs.add.using(unique_for=0)
    with pytest.raises(emq.ConfigurationError):
        jobs.add.using(unique_for=5, unique_until="never")
    with pytest.raises(emq.ConfigurationError):
        jobs.add.using(unique_for=5, job_id="x")
    with pytest.raises(emq.ConfigurationError):
        jobs.add.using(unique_for=5, debounce=1)


def test_eight_racing_threads_mint_one_job(emq_env):
    """Atomic in the mint script: on one server and on the 3-node cluster (EMQ_TEST_CLUSTER=1)."""
    refs, start = [], threading.Barrier(8)

    def call():
        start.wait()
        refs.append(jobs.add.using(unique_for=60).enqueue(7, 7))

    threads = [threading.Thread(target=call) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(r.created for r in refs) == 1
    assert len({r.id for r in refs}) == 1
    assert Queue("default").counts().ready == 1


def test_debounce_runs_once_with_the_last_calls_args_after_the_quiet_period(emq_env, tmp_path):
    client = get_client()
    path = tmp_path / "runs"
    refs = []
    for i in range(5):  # 5 calls within 2 s, each inside the 1 s quiet period of the one before
        before = server_ms(client)  # the 5th call's server time lies between before and after
        refs.append(jobs.touch.using(debounce=1, unique_key="reindex:7").enqueue(str(path), f"call{i}"))
        after = server_ms(client)
        if i < 4:
            time.sleep(0.35)  # the calls' spacing is what is tested, not a wait for a condition
    assert [r.created for r in refs] == [True, False, False, False, False]
    assert len({r.id for r in refs}) == 1
    run_until_empty()
    job = refs[0].get()
    assert job.state == "completed"
    assert path.read_text().splitlines() == ["call4"]
    # Due 1 s after the 5th call by the server's clock (not read after it returned: a loaded machine
    # put a few ms between the two), and started no earlier.
    due_ms, started_ms = round(job.due.timestamp() * 1000), round(job.started.timestamp() * 1000)
    assert before + 1000 <= due_ms <= after + 1000
    assert started_ms >= due_ms


def test_a_job_that_dies_by_stalling_frees_its_key_at_once(emq_env):
    q = Queue("default")
    once = jobs.add.using(unique_for=600, lease=1, max_stalled=0)
    first = once.enqueue(1, 2)
    [claimed] = q.bclaim(10, "w")  # the worker "dies": its lease runs out, no stall allowed
    assert claimed.id == first.id
    wait_for(lambda: first.id in q.sweep(), timeout=5)
    assert records.field(get_client(), q.keys.ns + f"job:{first.id}", "reason") == "stalled"
    again = once.enqueue(1, 2)
    assert again.created and again.id != first.id  # not 600 s later


def test_a_corrupt_job_frees_its_key_when_quarantined(emq_env):
    q = Queue("default")
    first = jobs.add.using(unique_for=600).enqueue(1, 2)
    records.spoil(get_client(), q.keys.ns + f"job:{first.id}", {"lease": "soon"})
    assert q.bclaim(10, "w") == []
    assert records.field(get_client(), q.keys.ns + f"job:{first.id}", "reason") == "corrupt"
    again = jobs.add.using(unique_for=600).enqueue(1, 2)
    assert again.created and again.id != first.id
