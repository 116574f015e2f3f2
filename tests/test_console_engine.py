"""The engine under the console: filtered slices from a cursor (sift.lua, the lane walk), the dead letter by
error class, moving jobs to another queue, and actions on every job that matches, in bounded steps."""

from __future__ import annotations

import pytest

import emq
from emq.core import classes
from emq.core.engine import Queue, bulk
from emq.core.engine.filters import Filters
from emq.core.engine.move import move
from emq.core.locate import holder
from tests import console_data, jobs

ERRORS = [
    "ValueError: bad card 4242\nTraceback (most recent call last):\n  ...",
    "emq.errors.JobTimeout: attempt 2 ran past its time limit of 300 s",
    "stalled: lease expired (worker w:1)",
    "parent 4f1e dead",
    "KeyError",
    "  spaced : out",
    "",
    "x" * 150 + ": long",
    "élan: accents",
]


def classes_seen(q: Queue) -> dict[str, int]:
    return {c.name: c.count for c in q.error_classes()}


def test_the_server_and_python_name_the_same_error_class(emq_env):
    """The finish scripts count each dead job under the class emq.core.classes.error_class names."""
    q = Queue("default")
    console_data.finished("default", [(i, i) for i in range(len(ERRORS))], "dead", error=lambda i: ERRORS[i])
    expected: dict[str, int] = {}
    for text in ERRORS:
        expected[classes.error_class(text)] = expected.get(classes.error_class(text), 0) + 1
    assert classes_seen(q) == expected
    assert classes.error_class(ERRORS[0]) == "ValueError" and classes.error_class(ERRORS[3]) == "parent"
    for name in expected:
        kept = q.sift("dead", Filters(error=name), budget=100, want=100)
        assert len(kept.entries) == expected[name], name


def test_error_classes_count_dead_jobs_as_they_die_and_leave(emq_env):
    """Retry, delete, purge and a move lower the count; a class goes at 0; first and last are when they died."""
    q = Queue("default")
    ids = console_data.finished("default", [(i, i) for i in range(10)], "dead",
                                error=lambda i: "ValueError: x" if i < 6 else "KeyError: y")
    before = {c.name: c for c in q.error_classes()}
    assert (before["ValueError"].count, before["KeyError"].count) == (6, 4)
    assert before["ValueError"].first_ms <= before["ValueError"].last_ms
    q.admin.retry(ids[:2])
    q.admin.delete(ids[2:3])
    assert classes_seen(q) == {"ValueError": 3, "KeyError": 4}
    assert q.admin.purge("dead", 0) == (7, 0)
    assert classes_seen(q) == {}


def test_a_time_range_reads_the_sets_index_and_the_cursor_survives_removals(emq_env):
    """3,000 scheduled jobs, 1,000 of each due time (ties, ordered by id), filtered by range; cancelling the
    matches a step at a time while the cursor moves on cancels every one and never one outside the range."""
    q = Queue("default")
    early = console_data.mint("default", [(i, 0) for i in range(3000)], due="+3600000")
    late = console_data.mint("default", [(i, 1) for i in range(500)], due="+7200000")
    due = int(q.job_fields(early[-1])["due"])
    plain = q.sift("scheduled", Filters(until=due), budget=1, want=1)
    assert plain.in_range == 3000 and plain.read == 1
    cursor, cancelled = "", 0
    while cursor is not None:
        s = bulk.step(q, "scheduled", Filters(name="ADD", until=due), "cancel", cursor, budget=700, want=300)
        cancelled, cursor = cancelled + s.changed, s.cursor
    assert cancelled == 3000 and q.size("scheduled") == 500
    assert {emq.get_job(i).state for i in late} == {"scheduled"}


def test_filters_on_name_group_origin_arguments_and_time_together(emq_env):
    q = Queue("default")
    console_data.finished("default", [(i, f"order-{i}") for i in range(40)], "dead",
                          error=lambda i: "ValueError: card" if i % 2 else "KeyError: k", fn=jobs.touch)
    found = q.sift("dead", Filters(name="Touch", error="ValueError", text="ORDER-1"), budget=100, want=100,
                   fields=("args",))
    assert sorted(e.fields["args"] for e in found.entries) == sorted(
        f'[{i},"order-{i}"]' for i in range(40) if i % 2 and str(i).startswith("1"))
    assert q.sift("dead", Filters(error=classes.ANY), budget=100, want=100).in_range == 40
    assert not q.sift("dead", Filters(group="nope"), budget=100, want=100).entries
    assert not q.sift("dead", Filters(since=10**13), budget=100, want=100).entries


def test_the_lane_walk_filters_ready_jobs_of_many_groups_and_acts_on_them(emq_env):
    """Ready jobs of 300 groups, walked by SSCAN a few lanes a round trip; cancelling the odd ones in steps
    of a small budget cancels each once, whatever the lanes' places after each step."""
    q = Queue("default")
    ids = console_data.mint("default", [(i, i % 2) for i in range(900)], group=lambda i: f"g{i % 300}")
    odd = {i for n, i in enumerate(ids) if n % 2}
    assert q.lane_sift(Filters(), budget=1, want=1).in_range == 900
    cursor, seen = "", []
    while cursor is not None:
        s = bulk.step(q, "ready", Filters(text=",1]"), "cancel", cursor, budget=50, want=20)
        seen += [1] * s.changed
        cursor = s.cursor
    assert len(seen) == len(odd) and {emq.get_job(i).state for i in odd} == {"cancelled"}
    assert q.counts().ready == 450
    one = q.lane_sift(Filters(group="g8"), budget=100, want=100)  # jobs 8, 308 and 608: even, left ready
    assert one.in_range == len(one.entries) == 3 and not one.cursor


def test_move_mints_the_same_id_in_the_target_and_takes_it_out_here(emq_env):
    """A dead job arrives ready with a fresh budget, a scheduled one keeps its due time; a running job, a
    missing one and an id the target uses for another job stay where they are."""
    src, dst = Queue("default"), Queue("other")
    dead = console_data.finished("default", [(1, 1)], "dead", error=lambda i: "ValueError: x")[0]
    later = console_data.mint("default", [(2, 2)], due="+3600000")[0]
    due = src.job_fields(later)["due"]
    running = console_data.mint("default", [(3, 3)])[0]
    src.bclaim(1, "w")
    taken = jobs.add.using(queue="default", job_id="shared").enqueue(4, 4).id
    jobs.add.using(queue="other", job_id="shared").enqueue(5, 5)
    out = move(src, [dead, later, running, "nope", taken], "other")
    assert out == ["ok", "ok", "active", "missing", "taken"]
    assert (dst.get_job(dead).state, dst.get_job(dead).attempts) == ("ready", 0)
    assert dst.job_fields(later)["due"] == due and dst.get_job(later).state == "scheduled"
    assert src.counts().dead == 0 and holder(dead)[0].name == "other"  # the id finds it (moved, it names its old queue)
    assert classes_seen(src) == {} and src.get_job(taken).state == "ready"


def test_a_move_cut_short_finishes_when_run_again(emq_env):
    """The copy minted, the source not yet taken out (a crash between the steps): the next run finds its own
    copy (same name, arguments, group) and finishes the move."""
    src, dst = Queue("default"), Queue("other")
    job_id = console_data.mint("default", [(1, 2)], due="+3600000")[0]
    from emq.core.engine import move as moving

    spec = moving._spec(job_id, src.jobs([job_id], moving.READ)[0])
    dst.mint([spec])
    assert move(src, [job_id], "other") == ["ok"]
    assert src.jobs([job_id], ("fn",))[0]["fn"] is None and dst.get_job(job_id).state == "scheduled"
    with pytest.raises(ValueError, match="same queue"):
        move(src, [job_id], "default")


def test_steps_count_without_changing_and_refuse_what_a_list_cannot_take(emq_env):
    q = Queue("default")
    console_data.finished("default", [(i, i) for i in range(30)], "completed")
    total = bulk.run([q], "completed", Filters(), "count")
    assert (total.matched, total.changed, total.in_range) == (30, 0, 30) and q.size("completed") == 30
    with pytest.raises(ValueError, match="retry takes dead jobs, not completed ones"):
        bulk.check("completed", "retry")
    with pytest.raises(ValueError, match="move needs a target"):
        bulk.check("dead", "move")

