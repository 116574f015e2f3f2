"""``manage.py emq jobs`` as the console's command line: every filter, every action on all that match, with
--dry-run, --yes and --json; read commands refuse a queue nobody used and a state that does not exist."""

from __future__ import annotations

import json
import subprocess

import pytest
from django.core.management import CommandError

from emq.core.engine import Queue
from tests import console_data, jobs
from tests.procs import manage
from tests.test_cli import as_json, emq_cmd


@pytest.fixture
def orders(emq_env):
    """20 dead jobs: the even ones ValueError about a card, the odd ones KeyError; and 30 scheduled."""
    dead = console_data.finished("default", [(i, f"card-{i}" if i % 2 == 0 else f"cash-{i}") for i in range(20)],
                                 "dead", error=lambda i: "ValueError: no" if i % 2 == 0 else "KeyError: x",
                                 fn=jobs.touch)
    later = console_data.mint("default", [(i, i) for i in range(30)], due="+3600000")
    return {"dead": dead, "later": later}


def test_jobs_filters_by_error_class_arguments_origin_and_time(orders):
    assert len(as_json("jobs", "default", "--state", "dead", "--error", "ValueError")) == 10
    assert len(as_json("jobs", "default", "--state", "dead", "--match", "CASH-1")) == 6  # 1, 11, 13, 15, 17, 19
    assert len(as_json("jobs", "default", "--state", "dead", "--error", "*", "--limit", "100")) == 20
    assert as_json("jobs", "default", "--state", "dead", "--origin", "repeat:x") == []
    assert len(as_json("jobs", "default", "--state", "scheduled", "--since", "2000-01-01", "--limit", "100")) == 30
    assert as_json("jobs", "default", "--state", "scheduled", "--until", "1h") == []  # due in an hour: not yet
    assert len(as_json("jobs", "default", "--state", "dead", "--since", "10m", "--limit", "100")) == 20
    with pytest.raises(CommandError, match=r"--since 'someday' is not an ISO 8601 date .* or an age such as 90m"):
        emq_cmd("jobs", "default", "--since", "someday")


def test_a_list_that_stops_early_says_so(orders, monkeypatch):
    from emq.cli import jobs as cli_jobs

    monkeypatch.setattr(cli_jobs, "SCAN_BUDGET", 8)
    out, _ = emq_cmd("jobs", "default", "--state", "dead", "--error", "KeyError")
    assert "(read 8 of 20 dead jobs and stopped: more may match further on" in out


def test_an_action_on_all_that_match_prints_how_many_it_changed(orders):
    dry = as_json("jobs", "default", "--state", "dead", "--error", "ValueError", "--retry", "--dry-run")
    assert (dry["matched"], dry["changed"], dry["dry_run"]) == (10, 0, True) and Queue("default").size("dead") == 20
    with pytest.raises(CommandError, match="pass --yes"):
        emq_cmd("jobs", "default", "--state", "dead", "--retry")
    done = as_json("jobs", "default", "--state", "dead", "--error", "ValueError", "--retry", "--yes")
    assert (done["matched"], done["changed"], done["left"]) == (10, 10, {})
    out, _ = emq_cmd("jobs", "default", "--state", "scheduled", "--cancel", "--yes")
    assert "cancelled 30 of 30 scheduled job(s) of 'default'" in out
    jobs.add.using(queue="other").enqueue(1, 1)
    moved = as_json("jobs", "default", "--state", "dead", "--match", "cash", "--move-to", "other", "--yes")
    assert moved["changed"] == 10 and Queue("other").counts().ready == 11 and Queue("default").size("dead") == 0


def test_actions_refuse_what_they_cannot_do_in_one_line(orders):
    cases = [
        (("--state", "completed", "--retry"), "retry takes dead jobs, not completed ones"),
        (("--state", "dead", "--retry", "--delete"), "give one action: --retry or --delete"),
        (("--state", "dead", "--dry-run"), "--dry-run goes with an action"),
        (("--state", "dead", "--move-to", "nosuch"), "no queue 'nosuch' in this project"),
    ]
    for args, message in cases:
        with pytest.raises(CommandError, match=message):
            emq_cmd("jobs", "default", *args)


def test_read_commands_refuse_unknown_queues_and_states(orders):
    """Finding 8 of #32: a typo is one line and exit 1, never "(none)" or an invented row."""
    with pytest.raises(CommandError, match=r"no queue 'nosuchqueue' in this project \(known: default"):
        emq_cmd("jobs", "nosuchqueue")
    with pytest.raises(CommandError, match="no state 'deadd': use one of waiting, scheduled, ready"):
        emq_cmd("jobs", "default", "--state", "deadd")
    with pytest.raises(CommandError, match="no queue 'nosuch' in this project"):
        emq_cmd("status", "--queues", "default,nosuch")


def test_from_a_shell_a_typo_is_one_line_and_exit_1(orders, emq_env):
    bad = manage(emq_env, "emq", "jobs", "nosuchqueue", stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = bad.communicate(timeout=60)
    assert bad.returncode == 1 and out == "" and len(err.strip().splitlines()) == 1, err
    ok = manage(emq_env, "emq", "jobs", "default", "--state", "dead", "--delete", "--yes", "--json",
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = ok.communicate(timeout=60)
    assert ok.returncode == 0 and json.loads(out)["changed"] == 20, err
