"""Fault suite, flows: a job waiting for a parent whose record vanished (deleted by hand, evicted) waited
for ever, and the dashboard refused to delete it. The leading Pump's tick now looks at a few waiting
jobs a second (_orphans.lua): a vanished parent in the same queue ends the child dead with reason
"parent <id> missing"; one in another queue is asked about again through its queue (flow_link), which
answers "missing" too. The dashboard deletes (and cancels) a waiting job.
"""

from __future__ import annotations

import pytest

from emq.core.engine import Queue
from emq.runtime.pump import Pump
from emq.testing import check_invariants
from tests import jobs, records
from tests.dashboard_fixtures import action_url, make_users, page_url, web_as
from tests.procs import server_ms, wait_for

TTL, PARK = 30_000, 15_000


def _vanish(client, q, job_id: str) -> None:
    """The parent's record goes, as a DEL by hand or an eviction would take it (its set entry too)."""
    client.delete(q.keys.job(job_id))
    client.zrem(q.keys.scheduled, job_id)


def _dead_for(client, q, child: str, parent: str) -> None:
    h = records.fields(client, q.keys.job(child))
    assert h["state"] == "dead" and h["reason"] == f"parent {parent} missing", h
    assert client.zscore(q.keys.waiting, child) is None and not client.exists(q.keys.deps(child))


def test_a_child_of_a_vanished_parent_in_its_queue_ends_dead_at_the_next_tick(emq_env, client):
    q = Queue("default")
    parent = jobs.add.enqueue_in(3600, 1, 1)
    other = jobs.add.enqueue_in(3600, 2, 2)
    child = jobs.add.using(after=[parent, other]).enqueue(3, 3)
    fine = jobs.add.using(after=[other]).enqueue(4, 4)
    _vanish(client, q, parent.id)
    assert records.field(client, q.keys.job(child.id), "state") == "waiting"
    q.tick("p", TTL, PARK)
    _dead_for(client, q, child.id, parent.id)
    assert records.field(client, q.keys.job(fine.id), "state") == "waiting", "a child of a parent still there waits on"
    check_invariants(q)


def test_a_child_of_a_vanished_parent_in_another_queue_ends_dead_through_the_pump(emq_env, client):
    """The tick hands the remote parent to the Pump, whose flow_link on the parent's queue answers
    "missing"; the relay ends the child as a parent of its own queue would."""
    q, home = Queue("default"), Queue("parents")
    parent = jobs.add.using(queue="parents").enqueue_in(3600, 1, 1)
    child = jobs.add.using(after=[parent]).enqueue(3, 3)
    _vanish(client, home, parent.id)
    pump = Pump([q])
    assert pump.step(q)[0], "this Pump leads"
    _dead_for(client, q, child.id, parent.id)
    check_invariants(q)
    check_invariants(home)


def test_the_look_is_bounded_and_goes_round_the_waiting_set(emq_env, client):
    """250 children of one vanished parent: at most 100 are looked at a tick, once a second; the look
    goes on where it stopped, so all 250 end within three looks."""
    q = Queue("default")
    parent = jobs.add.enqueue_in(3600, 1, 1)
    kids = jobs.add.using(after=[parent]).enqueue_many([((i, i), {}) for i in range(250)])
    _vanish(client, q, parent.id)
    waiting = []
    for _ in range(3):
        at = server_ms(client)
        q.tick("p", TTL, PARK)
        q.tick("p", TTL, PARK)  # within the same second: no second look
        waiting.append(client.zcard(q.keys.waiting))
        wait_for(lambda at=at: server_ms(client) > at + 1000, timeout=5)
    assert waiting == [150, 50, 0], waiting
    assert {records.field(client, q.keys.job(k.id), "reason") for k in kids} == {f"parent {parent.id} missing"}
    check_invariants(q)


def test_a_process_that_died_before_linking_leaves_no_child_waiting_for_ever(emq_env, client):
    """Step 2 of a cross-queue flow (flow_link) never ran: the Pump links the child itself, so the
    parent's end reaches it."""
    q, home = Queue("default"), Queue("parents")
    parent = jobs.add.using(queue="parents").enqueue(1, 1)
    child = jobs.add.using(after=[parent]).enqueue(3, 3)
    client.delete(home.keys.children(parent.id))  # as if the process died before linking
    Pump([q]).step(q)
    assert client.smembers(home.keys.children(parent.id)), "the Pump linked the child again"
    (c,) = home.bclaim(1, "w")
    from emq.core.records import Outcome

    home.finish([Outcome(c.id, c.token, "completed", "2")])
    Pump([home]).step(home)  # forwards the parent's outcome to the child's queue
    assert records.field(client, q.keys.job(child.id), "state") == "ready"


@pytest.mark.django_db
def test_the_dashboard_deletes_and_cancels_a_waiting_job(emq_env, client):
    q = Queue("default")
    parent = jobs.add.enqueue_in(3600, 1, 1)
    doomed, cancelled = (jobs.add.using(after=[parent]).enqueue(i, i) for i in range(2))
    grandchild = jobs.add.using(after=[doomed]).enqueue(5, 5)
    web = web_as(make_users()["operator"])
    page = web.get(page_url("job", queue="default", id=doomed.id)).content.decode()
    assert "Delete…" in page and 'id="emq-cancel"' in page
    listed = web.get(page_url("waiting", queue="default")).content.decode()
    assert "Delete selected…" in listed and "Cancel selected…" in listed
    form = {"queue": "default", "ids": doomed.id, "confirmed": "1"}
    web.post(action_url("delete"), form, follow=True)
    assert not client.exists(q.keys.job(doomed.id)) and not client.exists(q.keys.deps(doomed.id))
    told = records.fields(client, q.keys.job(grandchild.id))  # its own children are told it ended as cancelled
    assert told["state"] == "dead" and told["reason"] == f"parent {doomed.id} cancelled", told
    web.post(action_url("cancel"), {**form, "ids": cancelled.id}, follow=True)
    assert records.field(client, q.keys.job(cancelled.id), "state") == "cancelled"
    check_invariants(q)
