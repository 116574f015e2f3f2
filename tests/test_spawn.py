"""Dynamic children: ``ctx.spawn`` then ``ctx.wait_children`` — the parent waits with its slot freed and no
attempt spent, then gets the children's results in spawn order; a child in another queue reaches it
through the relay; a spawn in a later run mints nothing."""

from __future__ import annotations

import pytest

from emq.core.engine import Queue
from emq.runtime.worker import Worker
from emq.testing import check_invariants, run_until_empty
from tests import durable_jobs as dj
from tests.procs import running, wait_for


def test_a_parent_waits_for_its_children_and_gets_their_results_in_order(emq_env, tmp_path):
    """On one slot: the parent's wait frees it for its children (else this would never end)."""
    notes = tmp_path / "notes"
    ref = dj.parent.enqueue(str(notes), 5)
    with running(Worker(["default"], concurrency=1, park_timeout=0.5)):
        wait_for(lambda: ref.get().state == "completed", timeout=20, what="the parent done")
    job = ref.get()
    assert job.result["results"] == [0, 10, 20, 30, 40] and job.attempts == 1
    assert job.result["ids"] == [f"{ref.id}.{i}" for i in range(1, 6)]
    assert dj.lines(notes) == ["spawned", "spawned", "joined"]  # its second run spawns nothing new
    assert [s.kind for s in job.steps] == ["spawn"] * 5 + ["children"]
    q = Queue("default")
    assert q.counts().completed == 6 and q.counts().waiting == 0
    check_invariants("default")


def test_children_in_another_queue_reach_their_parent_through_the_relay(emq_env, tmp_path):
    notes = tmp_path / "notes"
    ref = dj.parent.enqueue(str(notes), 3, queue="kids")
    with running(Worker(["default", "kids"], concurrency=2, park_timeout=0.5)):
        wait_for(lambda: ref.get().state == "completed", timeout=20, what="the parent done")
    assert ref.get().result["results"] == [0, 10, 20]
    assert Queue("kids").counts().completed == 3
    check_invariants("default")
    check_invariants("kids")


def test_a_child_that_fails_raises_child_failed_in_the_parent(emq_env):
    ref = dj.parent_of_failure.enqueue()
    run_until_empty()
    job = ref.get()
    assert job.state == "completed"
    assert job.result["failed"] == [f"{ref.id}.2"]
    assert "ended dead" in job.result["message"] and "child 2 fails" in job.result["message"]


def test_eager_mode_runs_children_inline(emq_env, settings, tmp_path):
    settings.EMQ_EAGER = True
    notes = tmp_path / "notes"
    ref = dj.parent.enqueue(str(notes), 3)
    assert ref is not None
    assert dj.lines(notes) == ["spawned", "joined"]


@pytest.mark.parametrize("n", [200])
def test_many_children(emq_env, tmp_path, n):
    notes = tmp_path / "notes"
    ref = dj.parent.enqueue(str(notes), n)
    run_until_empty(concurrency=8)
    assert ref.get().result["results"] == [i * 10 for i in range(n)]
