"""``manage.py emq``: every subcommand on real jobs, its table and its --json, and exit codes 0/1."""

from __future__ import annotations

import io
import json
import signal
import subprocess

import pytest
from django.core.management import CommandError, call_command

import emq
from emq.core.engine import Queue
from emq.testing import run_until_empty
from tests import jobs
from tests.procs import manage, wait_for


def emq_cmd(*args: str, stdin: str = "") -> tuple[str, str]:
    """Run ``manage.py emq ARGS`` in-process: (stdout, stderr); CommandError when it exits 1."""
    out, err = io.StringIO(), io.StringIO()
    import sys

    old = sys.stdin
    sys.stdin = io.StringIO(stdin)
    try:
        call_command("emq", *args, stdout=out, stderr=err)
    finally:
        sys.stdin = old
    return out.getvalue(), err.getvalue()


def as_json(*args: str):
    return json.loads(emq_cmd(*args, "--json")[0])


@pytest.fixture
def finished(emq_env):
    """3 completed and 2 dead jobs in default, 1 ready and 1 scheduled left."""
    done = [jobs.add.enqueue(n, n) for n in range(3)]
    dead = [jobs.always_fails.using(max_attempts=1).enqueue(f"boom {n}") for n in range(2)]
    run_until_empty()
    ready = jobs.add.enqueue(7, 7)
    later = jobs.add.enqueue_in(3600, 8, 8)
    return {"done": done, "dead": dead, "ready": ready, "later": later}


def test_status_table_and_json(finished):
    row = as_json("status")[0]
    assert {k: row[k] for k in ("queue", "scheduled", "ready", "active", "completed", "dead")} == {
        "queue": "default", "scheduled": 1, "ready": 1, "active": 0, "completed": 3, "dead": 2}
    assert row["oldest_ready_ms"] >= 0 and row["workers"] == 0
    table = emq_cmd("status")[0].splitlines()
    assert table[0].split()[:6] == ["QUEUE", "SCHEDULED", "READY", "ACTIVE", "COMPLETED", "DEAD"]
    assert table[1].split()[:6] == ["default", "1", "1", "0", "3", "2"]


def test_jobs_lists_a_state_with_filters(finished):
    dead = as_json("jobs", "default", "--state", "dead")
    assert {r["id"] for r in dead} == {r.id for r in finished["dead"]}
    assert all(r["error"].startswith("RuntimeError: boom") for r in dead)
    assert len(as_json("jobs", "default", "--state", "completed", "--limit", "2")) == 2
    assert [r["id"] for r in as_json("jobs", "default")] == [finished["ready"].id]
    assert [r["id"] for r in as_json("jobs", "default", "--state", "scheduled")] == [finished["later"].id]


def test_a_job_not_due_yet_has_no_age_and_a_ready_one_counts_from_its_due_time(finished):
    """Age counts from when a job became due: none for one due in an hour (not minus an hour)."""
    (later,) = as_json("jobs", "default", "--state", "scheduled")
    (ready,) = as_json("jobs", "default")
    assert later["age"] is None and 0 <= ready["age"] < 60_000
    assert all(r["age"] >= 0 for r in as_json("jobs", "default", "--state", "completed"))
    table = emq_cmd("jobs", "default", "--state", "scheduled")[0]
    assert "-3600" not in table and "—" in table.splitlines()[1]
    assert as_json("jobs", "default", "--state", "completed", "--name", "always_fails") == []
    assert "tests.jobs.add" in emq_cmd("jobs", "default", "--state", "completed")[0]


def test_show_finds_a_job_in_any_queue(finished):
    job_id = finished["dead"][0].id
    data = as_json("show", job_id)
    assert (data["id"], data["state"], data["attempts"]) == (job_id, "dead", 1)
    assert "RuntimeError: boom" in emq_cmd("show", job_id, "--queue", "default")[0]
    with pytest.raises(CommandError, match="no job 'nope'"):
        emq_cmd("show", "nope")


def test_retry_by_id_and_exit_code_by_outcome(finished):
    dead_id = finished["dead"][0].id
    rows = as_json("retry", dead_id)
    assert rows == [{"id": dead_id, "status": "ok"}] and emq.get_job(dead_id).state == "ready"
    with pytest.raises(CommandError, match="1 of 2 job"):
        emq_cmd("retry", finished["dead"][1].id, finished["done"][0].id)
    assert emq.get_job(finished["dead"][1].id).state == "ready"


def test_retry_of_a_dead_chain_step_resumes_the_chain(emq_env, client):
    """``emq retry ID`` does what emq.retry does: the step after the retried one waits for it again."""
    cause = "emqtest-cli-cause"
    last = emq.chain(jobs.plus_one.s(1), jobs.broken_until_fixed.s(cause), jobs.plus_one.s())
    run_until_empty(["default"])
    middle = emq.get_job(last.get().reason.split()[2])
    assert (middle.state, last.get().state) == ("dead", "dead")
    client.set(cause, "fixed")
    assert as_json("retry", middle.id) == [{"id": middle.id, "status": "ok"}]
    assert last.get().state == "waiting"
    run_until_empty(["default"])
    assert last.get().result == 21
    client.delete(cause)


def test_retry_all_dead_asks_first(finished):
    with pytest.raises(CommandError, match="pass --yes"):
        emq_cmd("retry", "--all-dead", "default")
    assert Queue("default").counts().dead == 2
    out, _ = emq_cmd("retry", "--all-dead", "default", "--yes")
    assert "retried 2 dead job(s)" in out and Queue("default").counts().dead == 0


def test_delete_refuses_ready_jobs(finished):
    ok_id, ready_id = finished["done"][0].id, finished["ready"].id
    with pytest.raises(CommandError, match="1 of 2 job"):
        emq_cmd("delete", ok_id, ready_id)
    with pytest.raises(emq.JobNotFound):
        emq.get_job(ok_id)
    assert emq.get_job(ready_id).state == "ready"


def test_purge_by_state_and_age(finished):
    out, _ = emq_cmd("purge", "default", "--state", "dead", "--older-than", "1h", "--yes")
    assert "no dead job finished over 1h ago" in out and Queue("default").counts().dead == 2
    with pytest.raises(CommandError, match="no terminal to ask on; pass --yes"):
        emq_cmd("purge", "default", "--state", "completed")
    assert as_json("purge", "default", "--state", "completed", "--yes") == {"deleted": 3}
    assert Queue("default").counts().completed == 0 and Queue("default").counts().dead == 2


def test_purge_of_many_shows_progress(emq_env):
    jobs.add.using(max_attempts=1).enqueue_many([((n, n), {}) for n in range(1500)])
    run_until_empty(concurrency=8)
    out, err = emq_cmd("purge", "default", "--state", "completed", "--yes")
    assert "deleted 1,500 completed job(s)" in out and "1,500/1,500" in err


def test_enqueue_now_and_later(emq_env):
    now = as_json("enqueue", "tests.jobs.add", "--args", "[2, 3]")
    assert emq.get_job(now["id"]).state == "ready" and emq.get_job(now["id"]).args == [2, 3]
    later = as_json("enqueue", "tests.jobs.touch", "--kwargs", '{"path": "/dev/null"}', "--in", "10m")
    job = emq.get_job(later["id"])
    assert job.state == "scheduled" and 599 <= (job.due - job.created).total_seconds() <= 600
    with pytest.raises(CommandError, match="--args is not JSON"):
        emq_cmd("enqueue", "tests.jobs.add", "--args", "[1,")
    with pytest.raises(CommandError, match='no job registered as "tests.jobs.nope"'):
        emq_cmd("enqueue", "tests.jobs.nope")


def test_enqueue_a_django_task(emq_env, settings):
    settings.EMQ_IMPORTS = ["tests.jobs", "tests.tasks"]  # the CLI finds a Task in a module the project imports
    row = as_json("enqueue", "tests.tasks.add", "--args", "[20, 22]")
    run_until_empty()
    from tests import tasks

    assert tasks.add.get_result(row["id"]).return_value == 42


def test_server_refuses_a_server_it_does_not_own(emq_env):
    with pytest.raises(CommandError, match="only the embedded Valkey"):
        emq_cmd("server", "stop")


def test_real_process_exit_codes_and_json(finished, emq_env):
    """From a shell: --json parses, exit 0 on success and 1 on failure with one line on stderr."""
    ok = manage(emq_env, "emq", "jobs", "default", "--state", "dead", "--json", stdout=subprocess.PIPE,
                stderr=subprocess.PIPE, text=True)
    out, err = ok.communicate(timeout=60)
    assert ok.returncode == 0 and len(json.loads(out)) == 2, err
    bad = manage(emq_env, "emq", "show", "no-such-job", stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _, err = bad.communicate(timeout=60)
    assert bad.returncode == 1 and err.strip().splitlines() == [
        f"CommandError: no job 'no-such-job' in any of the 1 known queues (prefix {emq_env['EMQ_PREFIX']!r}): "
        "never minted there, or deleted or trimmed after its retention"]


def test_status_watch_repeats_until_ctrl_c(finished, emq_env):
    """--watch --json prints one JSON line per tick; Ctrl-C ends it with exit 0."""
    proc = manage(emq_env, "emq", "status", "--watch", "0.2", "--json", stdout=subprocess.PIPE,
                  stderr=subprocess.PIPE, text=True)
    ticks = [json.loads(proc.stdout.readline()) for _ in range(2)]
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err
    assert [t[0]["completed"] for t in ticks] == [3, 3]


def test_cancel_scheduled_and_ready_jobs_and_exit_code_by_outcome(finished):
    """Both end cancelled and are listed so; a finished job is left as it was and the exit code says so."""
    waiting = [finished["ready"].id, finished["later"].id]
    assert as_json("cancel", *waiting) == [{"id": i, "status": "ok"} for i in waiting]
    assert {emq.get_job(i).state for i in waiting} == {"cancelled"}
    c = Queue("default").counts()
    assert (c.ready, c.scheduled, c.cancelled) == (0, 0, 2)
    assert {r["id"] for r in as_json("jobs", "default", "--state", "cancelled")} == set(waiting)
    done = finished["done"][0].id
    with pytest.raises(CommandError, match="2 of 2 job"):
        emq_cmd("cancel", done, "no-such-job")
    rows = json.loads(_out_of_failing("cancel", done, "no-such-job", "--json"))
    assert rows == [{"id": done, "status": "completed"}, {"id": "no-such-job", "status": "missing"}]
    assert emq.get_job(done).state == "completed"
    assert "CANCELLED" in emq_cmd("status")[0].splitlines()[0]


def _out_of_failing(*args: str) -> str:
    """stdout of a subcommand that exits 1 (it prints its rows before it fails)."""
    out = io.StringIO()
    with pytest.raises(CommandError):
        call_command("emq", *args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def test_cancel_a_running_job_stops_it(emq_env, tmp_path):
    """A worker runs a job until it is cancelled: `emq cancel` ends it, its code sees emq.Cancelled."""
    import threading

    notes = tmp_path / "notes"
    ref = jobs.until_cancelled.enqueue(str(notes))
    drain = threading.Thread(target=run_until_empty)
    drain.start()
    try:
        wait_for(lambda: notes.exists(), what="the job running")
        out, _ = emq_cmd("cancel", ref.id)
        assert out.split() == ["ID", "STATUS", ref.id, "ok"]
        wait_for(lambda: "Cancelled cancelled=True" in notes.read_text(), timeout=5, what="the code saw the cancel")
    finally:
        emq.cancel(ref.id)
        drain.join(timeout=30)
    job = emq.get_job(ref.id)
    assert (job.state, job.attempts, Queue("default").counts().active) == ("cancelled", 1, 0)


def test_pause_and_resume_a_queue_and_a_lane(emq_env):
    """Paused: nothing is claimed and status says so; resumed: the jobs run. Twice is no error."""
    jobs.add.enqueue(1, 1)
    lane = jobs.add.using(group="tenant-7").enqueue(2, 2)
    assert as_json("pause", "default") == {"queue": "default", "group": None, "paused": True, "changed": True}
    out, _ = emq_cmd("pause", "default")
    assert "queue 'default' was already paused: nothing changed" in out
    row = as_json("status")[0]
    assert (row["paused"], row["paused_groups"], row["ready"]) == (True, [], 2)
    assert emq_cmd("status")[0].splitlines()[1].split()[-1] == "queue"
    run_until_empty()
    assert Queue("default").counts().completed == 0
    assert "paused lane 'tenant-7' of queue 'default'" in emq_cmd("pause", "default", "--group", "tenant-7")[0]
    assert "resumed queue 'default'" in emq_cmd("resume", "default")[0]
    row = as_json("status")[0]
    assert (row["paused"], row["paused_groups"], row["capped_groups"]) == (False, ["tenant-7"], 0)
    run_until_empty()
    assert emq.get_job(lane.id).state == "ready" and Queue("default").counts().completed == 1
    assert as_json("resume", "default", "--group", "tenant-7")["changed"] is True
    assert as_json("resume", "default", "--group", "tenant-7")["changed"] is False
    run_until_empty()
    assert emq.get_job(lane.id).state == "completed"


def test_pause_refuses_a_queue_nobody_used(emq_env):
    """A typo pauses nothing: exit 1 naming the known queues."""
    jobs.add.enqueue(1, 1)
    with pytest.raises(CommandError, match=r"no queue 'defualt' in this project \(known: default\)"):
        emq_cmd("pause", "defualt")
    assert not emq.queue("defualt").paused()


def test_pause_and_cancel_from_a_shell(emq_env):
    """Real processes: exit 0 and JSON on success, exit 1 with one line on stderr on failure."""
    ref = jobs.add.enqueue_in(3600, 1, 1)
    ok = manage(emq_env, "emq", "pause", "default", "--json", stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                text=True)
    out, err = ok.communicate(timeout=60)
    assert ok.returncode == 0 and json.loads(out)["changed"] is True, err
    assert emq.queue("default").paused()
    bad = manage(emq_env, "emq", "cancel", ref.id, "nope", stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = bad.communicate(timeout=60)
    assert bad.returncode == 1 and err.strip().splitlines() == ["CommandError: 1 of 2 job(s) not cancelled"]
    assert emq.get_job(ref.id).state == "cancelled"


def test_functions_lists_this_versions_libraries_and_prune_deletes_only_others(emq_env, client):
    """Each emq version leaves its own function libraries on the server; --prune keeps this version's."""
    old = "emq_bclaim_0000000000000000"  # as an earlier version of the claim would have named its library
    client.execute_command("FUNCTION", "LOAD", "REPLACE",
                           f"#!lua name={old}\nredis.register_function('{old}', function() return 1 end)")
    jobs.add.enqueue(1, 2)
    assert len(Queue("default").bclaim(1, "w")) == 1  # loads this version's claim where it runs
    rows = as_json("functions")["libraries"]
    assert {"this", "other"} <= {r["version"] for r in rows}
    assert all(r["version"] == "other" for r in rows if r["library"] == old)
    out, _ = emq_cmd("functions", "--prune")
    assert "deleted" in out
    left = as_json("functions")["libraries"]
    assert left and all(r["version"] == "this" for r in left)
    jobs.add.enqueue(3, 4)
    assert len(Queue("default").bclaim(1, "w")) == 1  # this version's claim still runs
