"""An id stands alone (DESIGN rule 13): whoever holds a job id reads, cancels and retries the job
without its queue, from Python, the command line and the dashboard, whatever the number of queues.

A generated id names its queue (``emq.core.ids``); a caller's ``job_id`` is noted in the id index
by its mint (``emq.core.idindex``); an id minted before either is found by asking every known queue.
"""

from __future__ import annotations

import dataclasses
import os
import re

import pytest
from django.core.management import CommandError

import emq
from emq.core import ids, keys, registry, topology
from emq.core.connection import get_client
from emq.core.logical import partition
from emq.scheduling import repeat
from emq.testing import run_until_empty
from tests import jobs
from tests.dashboard_fixtures import make_users, page_url, web_as
from tests.procs import wait_for
from tests.test_cli import as_json, emq_cmd

TOKEN = r"[A-Za-z0-9_-]{16}"


@pytest.fixture
def parted(emq_env, settings):
    """A plain queue "mail" and a queue "clicks" of 3 partitions."""
    settings.EMQ_PARTITIONS = {"clicks": 3}


def logical(job: emq.Job) -> str:
    return topology.logical(job.queue)


def one_of_each(tag: str = "") -> dict[str, emq.JobRef]:
    """A job of every kind of id, none in the default queue: generated and chosen, plain and partitioned."""
    return {
        "generated": jobs.add.using(queue="mail").enqueue(1, 1),
        "generated, partitioned": jobs.add.using(queue="clicks").enqueue(2, 2),
        "chosen": jobs.add.using(queue="mail", job_id=f"invoice-42{tag}").enqueue(3, 3),
        "chosen, partitioned, grouped": jobs.add.using(queue="clicks", job_id=f"click-7{tag}", group="g").enqueue(4, 4),
        "chosen, scheduled": jobs.add.using(queue="mail", job_id=f"later-1{tag}").enqueue_in(3600, 5, 5),
    }


@pytest.mark.one_server
def test_a_generated_id_names_its_queue_and_reads_back():
    """<queue>.<16 URL-safe characters>, a partition's ~<i> after it; as long as the old ids in the default queue."""
    one, many = ids.new("mail"), ids.new_many("a.b-c_d", 3)
    assert re.fullmatch(rf"mail\.{TOKEN}", one) and ids.queue_of(one) == "mail"
    assert len(set(many)) == 3 and all(re.fullmatch(rf"a\.b-c_d\.{TOKEN}", i) for i in many)
    assert {ids.queue_of(i) for i in many} == {"a.b-c_d"} and ids.queue_of(one + "~2") == "mail"
    assert len(ids.new("default")) == 24  # what the 24 hex digits of the old ids took: no more memory per job
    unsafe = ids.new("with space")  # a name an id cannot carry in a URL: the old form, found by asking
    assert re.fullmatch(r"[0-9a-f]{24}", unsafe) and ids.queue_of(unsafe) is None
    for chosen in ("invoice-42", "x.short", "mail.", ".AAAAAAAAAAAAAAAA", "mail.AAAAAAAAAAAAAAA!", "a" * 24):
        assert ids.queue_of(chosen) is None, chosen


def test_get_job_and_cancel_take_an_id_alone_or_a_ref_in_any_queue(parted):
    refs = one_of_each()
    for kind, ref in refs.items():
        assert ref.queue in ("mail", "clicks"), kind
        for job in (emq.get_job(ref.id), emq.get_job(ref)):
            assert (job.id, logical(job)) == (ref.id, ref.queue), kind
    assert refs["generated, partitioned"].id.startswith("clicks.") and "~" in refs["generated, partitioned"].id
    for i, (kind, ref) in enumerate(refs.items()):
        assert emq.cancel(ref if i % 2 else ref.id) is True, kind
        assert emq.get_job(ref.id).state == "cancelled" and emq.cancel(ref.id) is False, kind


def test_the_command_line_retries_cancels_shows_and_deletes_by_id_alone(parted):
    dead = [jobs.always_fails.using(queue="mail", max_attempts=1).enqueue(),
            jobs.always_fails.using(queue="clicks", max_attempts=1).enqueue(),
            jobs.always_fails.using(queue="mail", max_attempts=1, job_id="dead-own").enqueue(),
            jobs.always_fails.using(queue="clicks", max_attempts=1, job_id="dead-click").enqueue()]
    run_until_empty(["mail", "clicks"])
    ids_ = [r.id for r in dead]
    assert {emq.get_job(i).state for i in ids_} == {"dead"}
    assert as_json("retry", *ids_) == [{"id": i, "status": "ok"} for i in ids_]
    assert {emq.get_job(i).state for i in ids_} == {"ready"}
    assert as_json("cancel", *ids_) == [{"id": i, "status": "ok"} for i in ids_]
    shown = as_json("show", ids_[1])
    assert (shown["id"], topology.logical(shown["queue"]), shown["state"]) == (ids_[1], "clicks", "cancelled")
    assert as_json("delete", ids_[0], ids_[2]) == [{"id": i, "status": "ok"} for i in (ids_[0], ids_[2])]
    with pytest.raises(emq.JobNotFound):
        emq.get_job(ids_[2])
    ready = jobs.add.using(queue="clicks", job_id="ready-click").enqueue(1, 1).id
    with pytest.raises(CommandError, match="1 of 2 job"):
        emq_cmd("cancel", ready, "no-such-job")
    assert emq.get_job(ready).state == "cancelled"


def test_an_id_two_queues_hold_asks_which_one(emq_env):
    """A job_id reused in two queues: an error naming both and how to choose, until the queue is named."""
    for queue in ("one", "two"):
        jobs.add.using(queue=queue, job_id="twice").enqueue(1, 2)
    with pytest.raises(emq.AmbiguousJobId, match=r"'twice' is in 2 queues \(one, two\).*queue=") as caught:
        emq.get_job("twice")
    assert caught.value.queues == ["one", "two"] and isinstance(caught.value, LookupError)
    with pytest.raises(emq.AmbiguousJobId):
        emq.cancel("twice")
    assert emq.get_job("twice", queue="two").queue == "two"
    assert as_json("cancel", "twice", "--queue", "one") == [{"id": "twice", "status": "ok"}]
    with pytest.raises(CommandError, match="--queue"):
        emq_cmd("cancel", "twice")
    with pytest.raises(CommandError, match="is in 2 queues"):
        emq_cmd("show", "twice")


def test_an_id_found_nowhere_says_where_it_looked(emq_env):
    jobs.add.using(queue="mail").enqueue(1, 2)
    with pytest.raises(emq.JobNotFound, match=r"no job 'nope' in any of the 2 known queues \(prefix '[^']+'\): "
                                              "never minted there, or deleted or trimmed"):
        emq.get_job("nope")
    gone = ids.new("mail")
    with pytest.raises(emq.JobNotFound, match=f"no job '{gone}' in queue 'mail', which the id names, nor in any"):
        emq.get_job(gone)
    assert emq.cancel("nope") is False and emq.cancel(gone) is False


def test_ids_minted_without_their_queue_are_still_found(parted):
    """Ids of an older release (24 hex digits, no queue) and a chosen id whose index entry is gone."""
    old = []
    for queue in ("mail", "clicks#1"):
        spec = jobs.add.spec((1, 2), {}, "")
        spec = dataclasses.replace(spec, id=os.urandom(12).hex())
        assert partition(queue).mint([spec]) == [True]
        registry.remember_queue(partition(queue))  # as the release that minted it did
        old.append(spec.id)
    lost = jobs.add.using(queue="mail", job_id="lost-entry").enqueue(3, 4).id
    assert get_client().delete(keys.job_index(emq_env_prefix(), lost)) == 1
    for job_id, queue in zip([*old, lost], ["mail", "clicks", "mail"], strict=True):
        assert logical(emq.get_job(job_id)) == queue
    assert as_json("cancel", old[1]) == [{"id": old[1], "status": "ok"}]
    assert emq.cancel(old[0]) and emq.cancel(lost)
    assert {emq.get_job(i).state for i in [*old, lost]} == {"cancelled"}


def emq_env_prefix() -> str:
    from emq.core import config

    return config.get("EMQ_PREFIX")


def test_a_chosen_id_is_noted_for_as_long_as_its_job_can_live(parted, settings):
    settings.EMQ_RESULT_TTL, settings.EMQ_DEAD_TTL = 3600, 7200
    now = jobs.add.using(queue="mail", job_id="noted-now").enqueue(1, 2)
    later = jobs.add.using(queue="clicks", job_id="noted-later").enqueue_in(600, 1, 2)
    client, prefix, day = get_client(), emq_env_prefix(), 24 * 3600 * 1000
    assert client.smembers(keys.job_index(prefix, now.id)) == {"mail"}
    (part,) = client.smembers(keys.job_index(prefix, later.id))
    assert topology.logical(part) == "clicks" and emq.get_job(later.id).queue == part
    assert day + 7_100_000 < client.pttl(keys.job_index(prefix, now.id)) <= day + 7_200_000
    assert day + 7_700_000 < client.pttl(keys.job_index(prefix, later.id)) <= day + 7_800_000
    generated = jobs.add.using(queue="mail").enqueue(1, 2)
    assert not client.exists(keys.job_index(prefix, generated.id))  # a generated id needs no entry


def test_flow_children_and_recurrences_with_derived_ids_are_found_alone(parted):
    parent = jobs.add.using(queue="mail").enqueue(1, 1)
    child = jobs.add.using(queue="clicks", job_id="child-of", after=[parent]).enqueue(2, 2)
    assert emq.get_job("child-of").state == "waiting" and logical(emq.get_job(child.id)) == "clicks"
    q = partition("mail")
    repeat.put(q, repeat.Definition(name="digest", job="tests.jobs.add", every_ms=1000, args=(1, 2)))
    minted = wait_for(lambda: [m for m in repeat.mint_due(q) if m.created], timeout=5, what="an occurrence minted")
    occurrence = repeat.occurrence_id("digest", minted[0].last_ms)
    assert emq.get_job(occurrence).queue == "mail" and emq.cancel(occurrence)


@pytest.mark.one_server
def test_a_lookup_costs_the_same_whatever_the_number_of_queues(emq_env):
    """Server commands (INFO commandstats) of lookups and enqueues with 30 queues known: no EXISTS per queue,
    but for an id that says nothing; a generated id's enqueue writes no index entry."""
    client = get_client()
    gen = [jobs.add.using(queue=f"q{i}").enqueue(i, i) for i in range(30)]
    own = jobs.add.using(queue="q7", job_id="own-7").enqueue(7, 7)
    spec = dataclasses.replace(jobs.add.using(queue="q9").spec((9, 9), {}, ""), id=os.urandom(12).hex())
    partition("q9").mint([spec])

    def commands(call) -> dict[str, int]:
        client.config_resetstat()
        call()
        stats = {k.removeprefix("cmdstat_"): int(v["calls"]) for k, v in client.info("commandstats").items()}
        out = {k: stats.get(k, 0) for k in ("exists", "smembers", "sadd", "pexpire")}
        # a job's record read: HGETALL of a hash, GET of a packed one (EMQ_RECORD_FORMAT "2" reads that first)
        return {**out, "hgetall": stats.get("hgetall", 0) + stats.get("get", 0)}

    assert commands(lambda: emq.get_job(gen[3].id)) == {"exists": 0, "smembers": 1, "hgetall": 1, "sadd": 0,
                                                        "pexpire": 0}
    assert commands(lambda: emq.get_job(own.id)) == {"exists": 0, "smembers": 1, "hgetall": 1, "sadd": 0,
                                                     "pexpire": 0}
    named = commands(lambda: emq.cancel(gen[4].id, queue="q4"))
    alone = commands(lambda: emq.cancel(gen[5].id))
    assert alone == {**named, "exists": named["exists"] + 1, "smembers": 1}  # the lookup: one EXISTS, one SMEMBERS
    assert commands(lambda: jobs.add.using(queue="q3").enqueue(1, 1))["sadd"] == 0
    assert commands(lambda: jobs.add.using(queue="q3", job_id="own-3").enqueue(1, 1)) == {
        "exists": 2, "smembers": 0, "hgetall": 0, "sadd": 1, "pexpire": 1}  # the mint's EXISTS: the id taken?
    assert commands(lambda: emq.get_job(spec.id))["hgetall"] == 31  # an old id: every known queue, and default


def test_the_job_page_takes_an_id_alone(parted, db):
    viewer = make_users()["viewer"]
    web = web_as(viewer)
    for ref in one_of_each().values():
        r = web.get(page_url("job", id=ref.id))
        assert r.status_code == 200 and topology.logical(r.context["job"].queue) == ref.queue
    for queue in ("one", "two"):
        jobs.add.using(queue=queue, job_id="twice").enqueue(1, 2)
    r = web.get(page_url("job", id="twice"), follow=True)
    assert r.status_code == 200 and [q for q, _ in r.context["found"]] == ["one", "two"]


@pytest.mark.one_server
def test_a_forked_child_never_hands_out_its_parents_tokens():
    """Tokens come from a pool filled 256 at a time; a child process (a forking server's worker) starts afresh."""
    ids.new("mail")  # the pool now holds the next tokens of this process
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: one id, to the parent, then gone without running the parent's cleanup
        os.write(write, ids.new("mail").encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as pipe:
        child = pipe.read()
    os.waitpid(pid, 0)
    parents = {ids.new("mail") for _ in range(ids.POOL)}
    assert re.fullmatch(rf"mail\.{TOKEN}", child) and child not in parents


def test_after_takes_a_generated_id_of_another_queue_alone(emq_env):
    """after= with an id alone: a generated id names its parent's queue (the child's is only the fallback)."""
    parent = jobs.add.using(queue="mail").enqueue(1, 1)
    child = jobs.add.using(queue="reports", after=[parent.id]).enqueue(2, 2)
    assert emq.get_job(child.id).state == "waiting"
    run_until_empty(["mail", "reports"])
    assert emq.get_job(child).state == "completed" and emq.get_job(child).result == 4
