"""Format "2" (EMQ_RECORD_FORMAT = "2"): a job's record is one packed value, not a hash (emq/lua/_record.lua,
core/stored.py). A claim and a finish read a batch's records in one MGET and write them in one MSET, reading
only the record's head; everything else reads and writes it through the same owner. This release reads both
formats whichever it writes, so a deploy can switch once no older process runs (stored.py, rule 2)."""

from __future__ import annotations

import pytest
from django.test import override_settings

import emq
from emq.core import stored
from emq.core.engine import Queue
from emq.core.records import Outcome
from emq.testing import run_until_empty
from tests import durable_jobs, jobs, records
from tests.procs import wait_for

PACKED = override_settings(EMQ_RECORD_FORMAT="2")
MARKS_AT = stored.PACKED.count(stored.SEP) + stored.HEAD.index("")  # the head's marks in a record's split


def calls(client, names: tuple[str, ...]) -> dict[str, int]:
    """How many times the server ran each command so far (INFO commandstats)."""
    stats = client.info("commandstats")
    return {n: stats.get(f"cmdstat_{n}", {}).get("calls", 0) for n in names}


@PACKED
def test_a_job_is_one_packed_value_and_reads_back_as_a_hash_did(emq_env, client):
    ref = jobs.add.using(priority=3, max_attempts=5).enqueue(1, 2)
    key = Queue("default").keys.job(ref.id)
    assert client.type(key) == "string" and client.get(key).startswith(stored.PACKED)
    job = emq.get_job(ref.id)
    assert (job.state, job.name, job.args, job.attempts, job.max_attempts) == ("ready", "tests.jobs.add", [1, 2], 0, 5)
    assert stored.read_all(client, key)["v"] == "2"


@PACKED
def test_a_batch_is_claimed_and_finished_by_its_records_heads_in_one_mget_and_one_mset(emq_env, client, request):
    """The trick the speed rests on: 50 packed jobs claimed and completed without one hash command, a claim
    and a finish each one MGET and one MSET; their fields arrive as a hash's would. The commands are counted
    on this process's own embedded server (a shared one counts the other test processes' too)."""
    private = request.node.callspec.params.get("server_url", "embedded") == "embedded"
    refs = jobs.add.enqueue_many([((i, i), {}) for i in range(50)])
    q = Queue("default")
    names = ("hgetall", "hset", "hmget", "mget", "mset", "set")  # not GET: a claim reads the Pump's next tick
    before = calls(client, names)
    claimed = q.bclaim(50, "w")
    assert sorted((c.id, c.args, c.name, c.max_attempts, c.attempt) for c in claimed) == sorted(
        (r.id, [i, i], "tests.jobs.add", 3, 1) for i, r in enumerate(refs))
    q.finish([Outcome(c.id, c.token, "completed", str(c.args[0] * 2)) for c in claimed])
    after = calls(client, names)
    if private:
        assert {n: after[n] - before[n] for n in names} == {"hgetall": 0, "hset": 0, "hmget": 0, "mget": 2,
                                                            "mset": 2, "set": 0}
    assert [j.result for j in (emq.get_job(r.id) for r in refs)] == [i * 2 for i in range(50)]
    assert {client.type(q.keys.job(r.id)) for r in refs} == {"string"}


@PACKED
def test_a_failing_job_keeps_its_errors_and_ends_dead_packed(emq_env, client):
    ref = jobs.always_fails.using(max_attempts=2, backoff=(0, 0)).enqueue("no\nway")
    run_until_empty()
    job = emq.get_job(ref.id)
    assert (job.state, job.attempts) == ("dead", 2)
    assert "no" in job.error and client.type(Queue("default").keys.job(ref.id)) == "string"


@PACKED
def test_a_durable_job_becomes_a_hash_at_its_first_step_and_runs_its_steps_once(emq_env, client, tmp_path):
    """A journal grows with every step: a packed record would be read and rewritten whole each time, so a job
    that records one is a hash from then on (_packed.lua's JOURNAL), where a step is one field written."""
    ref = durable_jobs.flaky_steps.enqueue(str(tmp_path / "log"))
    key = Queue("default").keys.job(ref.id)
    assert client.type(key) == "string"
    run_until_empty()
    assert emq.get_job(ref.id).state == "completed" and client.type(key) == "hash"
    assert durable_jobs.lines(tmp_path / "log") == ["one", "two", "two"]  # step one once, step two retried


@override_settings(EMQ_RECORD_FORMAT="1")
def test_each_format_runs_the_others_jobs(emq_env, client):
    """A rolling switch: jobs minted as hashes run under format 2, packed ones under format 1."""
    hashed = jobs.add.enqueue(1, 1)
    with PACKED:
        packed = jobs.add.enqueue(2, 2)
        run_until_empty()
        late = jobs.add.enqueue(3, 3)
    run_until_empty()
    assert [emq.get_job(r.id).result for r in (hashed, packed, late)] == [2, 4, 6]
    q = Queue("default")
    assert [client.type(q.keys.job(r.id)) for r in (hashed, packed, late)] == ["hash", "string", "string"]


@PACKED
def test_a_value_holding_the_separator_keeps_its_job_a_hash(emq_env, client):
    ref = jobs.add.using(group="g\x1fh").enqueue(1, 2)
    assert client.type(Queue("default").keys.job(ref.id)) == "hash"
    run_until_empty()
    assert emq.get_job(ref.id).result == 3


@PACKED
@pytest.mark.parametrize("foreign", ["not a job", stored.PACKED + "ready\x1f1\x1f"])
def test_a_string_emq_did_not_write_is_still_quarantined(emq_env, client, foreign):
    """Also one that starts as a packed record does but lacks a head's nine values (_packed.lua's MATCH.shape)."""
    ref = jobs.add.enqueue(1, 2)
    key = Queue("default").keys.job(ref.id)
    client.set(key, foreign)
    run_until_empty()
    job = emq.get_job(ref.id)
    assert job.state == "dead" and "held a string" in job.error


@pytest.mark.parametrize("raw, fields", [
    (stored.PACKED + "ready\x1f\x1f\x1f\x1f_\x1f30000\x1f\x1f\x1f\x1ffn\x1fa.b", {
        "v": "2", "state": "ready", "lease": "30000", "group": "_", "fn": "a.b"}),
    (stored.PACKED + "ready\x1fp\x1f2\x1f\x1f_\x1f30000\x1f\x1f\x1f\x1fpriority\x1f3", {
        "v": "2", "state": "ready", "attempts": "2", "lease": "30000", "group": "_", "priority": "3"}),
    ("ready", None), (stored.PACKED + "ready", None),
])
def test_the_python_reader_decodes_what_the_lua_writes(raw, fields):
    assert stored.packed(raw) == fields


@pytest.mark.parametrize("fmt", ["1", "2"])
def test_the_suites_record_helper_spoils_either_format_as_a_fault_would(emq_env, client, fmt):
    """tests/records.py, which the suite's fault tests use to read and spoil a job in the format they run under:
    a packed record stays packed (its fault meets format 2's own paths) and the engine reads it (as ended dead,
    here); one that can no longer be packed (no v: a v0.2.0 job) becomes a hash."""
    with override_settings(EMQ_RECORD_FORMAT=fmt):
        ref, old = jobs.add.enqueue(1, 2), jobs.add.enqueue(3, 4)
    key, old_key = Queue("default").keys.job(ref.id), Queue("default").keys.job(old.id)
    kind = "hash" if fmt == "1" else "string"
    assert client.type(key) == kind
    assert records.some(client, key, "fn", "attempts") == ["tests.jobs.add", None]
    records.spoil(client, key, {"max_attempts": "many"}, drop=("args",))
    records.spoil(client, old_key, drop=("v",))
    assert (client.type(key), client.type(old_key)) == (kind, "hash")
    assert records.fields(client, key)["max_attempts"] == "many" and not records.has(client, key, "args")
    assert records.fields(client, key)["v"] == fmt and not records.has(client, old_key, "v")
    run_until_empty()
    assert emq.get_job(ref.id).state == "dead" and "max_attempts" in emq.get_job(ref.id).error
    assert emq.get_job(old.id).result == 7


@PACKED
def test_the_suites_packer_writes_what_the_engine_writes(emq_env, client):
    """records.pack, the suite's only writer of a packed record, against records the engine wrote: queued,
    claimed, and finished with a result."""
    q = Queue("default")
    refs = [jobs.add.using(priority=2, max_attempts=4).enqueue(1, 2), jobs.add.enqueue(3, 4)]
    (c,) = q.bclaim(1, "w")
    q.finish([Outcome(c.id, c.token, "completed", "3")])
    for r in refs:
        raw = client.get(q.keys.job(r.id))
        assert records.pack(stored.packed(raw)) == raw


@PACKED
def test_a_process_that_writes_packed_records_reads_one_in_one_command(emq_env, client, request):
    """get_job asks a packed job's key with GET first (stored.packed_first), not a hash command that meets
    WRONGTYPE and then a GET: one round trip; a job left a hash (here one whose group holds the separator) is read
    by its hash command after, and answers the same. Counted on this process's own embedded server."""
    if request.node.callspec.params.get("server_url", "embedded") != "embedded":
        pytest.skip("counts commands: needs this process's own server")
    packed, hashed = jobs.add.enqueue(1, 2), jobs.add.using(group="g\x1fh").enqueue(3, 4)
    names = ("get", "hgetall", "hmget")
    before = calls(client, names)
    assert emq.get_job(packed.id).args == [1, 2]
    after = calls(client, names)
    assert {n: after[n] - before[n] for n in names} == {"get": 1, "hgetall": 0, "hmget": 0}
    assert (emq.get_job(hashed.id).args, emq.get_job(hashed.id).group) == ([3, 4], "g\x1fh")


@PACKED
def test_due_packed_jobs_are_promoted_by_their_head_and_a_priority_still_goes_first(emq_env, client):
    """The Pump promotes a plain packed job by its head alone (_packed.lua's rec_ready); one with a priority takes
    the whole path, which puts it at its lane's front even once its group has left priority mode (its lane
    drained): it runs before the plain jobs that were ready first."""
    q = Queue("default")
    urgent = jobs.add.using(priority=5).enqueue_in(0.5, 9, 9)  # its group enters priority mode...
    jobs.add.enqueue(0, 0)
    assert len(q.bclaim(1, "w")) == 1  # ...and leaves it: its lane drained
    plain = [jobs.add.enqueue(i, i) for i in (1, 2)] + [jobs.add.enqueue_in(0.2, 3, 3)]
    wait_for(lambda: q.tick("t", 60_000, 1_000).promoted >= 0 and q.counts().ready == 4, timeout=10,
             what="the two scheduled jobs promoted")
    assert {client.type(q.keys.job(r.id)) for r in [*plain, urgent]} == {"string"}
    assert [c.id for c in q.bclaim(4, "w")] == [urgent.id, *(r.id for r in plain)]


@PACKED
def test_the_head_marks_each_field_a_claim_or_a_finish_must_act_on(emq_env, client):
    """A claim and a finish take a packed job by its head's first bytes only when its marks (_packed.lua's MARK)
    say the rest holds nothing to act on, so every writer must mark such a field: a priority, a unique key
    ("s" when it frees at start), a result. Each job still ends as its fields say: the unique keys are free."""
    q = Queue("default")
    unique, at_start = jobs.add.using(unique_for=60), jobs.add.using(unique_for=60, unique_until="start")
    refs = [jobs.add.enqueue(1, 2), jobs.add.using(priority=2).enqueue(3, 4), unique.enqueue(5, 6),
            at_start.enqueue(7, 8)]

    def marks():
        return [client.get(q.keys.job(r.id)).split(stored.SEP)[MARKS_AT] for r in refs]

    assert marks() == ["", "p", "u", "s"]
    run_until_empty()
    assert [emq.get_job(r.id).result for r in refs] == [3, 7, 11, 15]
    assert marks()[:2] == ["r", "pr"]
    again = [unique.enqueue(5, 6), at_start.enqueue(7, 8)]
    assert {r.id for r in again}.isdisjoint(r.id for r in refs)


@PACKED
def test_a_plain_job_is_written_in_the_forms_the_claim_and_the_finish_know_by_their_start(emq_env, client):
    """_packed.lua's fast paths find a plain job by a known start (HEADS): rec_claim a fresh ready one's (rec_front:
    no marks, attempts or finished time, then its group), rec_complete an active one's of its token (no marks, no
    finished time). A record that started otherwise would take the slow path, with the same outcome, so no other
    test would see the trick break: this one pins the forms the writers (mint, the claim) give such a job."""
    q, sep = Queue("default"), stored.SEP
    ref = jobs.add.enqueue(1, 2)
    key = q.keys.job(ref.id)
    group = stored.packed(client.get(key))["group"]
    assert client.get(key).startswith(f"{stored.PACKED}ready{sep}{sep}{sep}{sep}{group}{sep}")
    [job] = q.bclaim(1, "w")
    assert client.get(key).startswith(f"{stored.PACKED}active{sep}{sep}{job.token}{sep}{sep}{group}{sep}")
    assert q.finish([Outcome(job.id, job.token, "completed", "null")]) == ["completed"]
    assert client.get(key).startswith(f"{stored.PACKED}completed{sep}{sep}{job.token}{sep}")
