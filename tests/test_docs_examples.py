"""Every code example of the docs runs: the pages include them from docs/examples/, and here each
file is loaded as a module and its ``example*`` functions run on the suite's servers.

A file is loaded under the name ``docs_examples.<stem>``, so its jobs register as
``docs_examples.<stem>.<function>`` and a worker in this process (``run_until_empty``) finds them.
Settings examples are read with ``ast`` (no code of theirs runs) and checked against emq's settings.
"""

from __future__ import annotations

import ast
import importlib.util
import io
import shlex
import sys
import unittest
from pathlib import Path
from types import ModuleType

import pytest
import yaml
from django.core.management import load_command_class

from emq.core.config import DEFAULTS
from emq.jobs.registry import declared
from tests.procs import ROOT

EXAMPLES = ROOT / "docs" / "examples"
RUN = (
    "getting_started", "concepts", "long_jobs", "fair_tenants", "django_tasks", "operating", "migrating", "workflows",
    "live_state", "flow_control", "durable_jobs",
)


def load(stem: str) -> ModuleType:
    """The example file as a module (loaded once: its jobs and tasks register at import).

    Recurrences its jobs declare (``cron=``, ``every=``) are taken out of the registry of
    declarations again and kept on the module as ``declared``: a Pump of a later test would
    otherwise upsert them as rows.
    """
    name = f"docs_examples.{stem}"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{stem}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        module.declared = {job: declared.pop(job) for job in list(declared) if job.startswith(f"{name}.")}
    return sys.modules[name]


def assigned(path: Path) -> dict[str, ast.expr]:
    """The module-level names an example assigns, with their value expressions (last one wins)."""
    out = {}
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    out[target.id] = node.value
    return out


@pytest.mark.django_db(transaction=True)  # enqueue_on_commit needs the database
@pytest.mark.parametrize("stem", RUN)
def test_example_runs(stem, emq_env):
    """The page's example works as printed: enqueue, run, read back."""
    load(stem).example()


def test_scaling_example_on_a_partitioned_queue(emq_env, settings):
    """The partitions the guide prints are the ones emq makes."""
    settings.EMQ_PARTITIONS = {"clicks": 3}
    load("scaling").example()


def test_live_state_events_example(emq_env, settings):
    """The event loop of the live state guide, with EMQ_EVENTS on as the guide says."""
    settings.EMQ_EVENTS = True
    load("live_state").example_events()


@pytest.mark.django_db(transaction=True)
def test_recurrence_row_example(emq_env):
    """A row as the guide writes it passes the admin's checks and saves."""
    load("recurrences").example_row()


def test_recurrences_declared_in_code():
    """The guide's decorators declare the recurrences it says they do."""
    from datetime import timedelta

    name = "docs_examples.recurrences"
    assert load("recurrences").declared == {
        f"{name}.nightly_cleanup": {"cron": "0 3 * * *"}, f"{name}.refresh_rates": {"every": timedelta(minutes=10)},
    }


def test_dst_example():
    """The DST table of the recurrences guide is what the Pump computes."""
    load("recurrences").example_dst()


def test_testing_guide_pytest_and_eager(emq_env):
    """The guide's pytest test and its eager-mode test pass as written."""
    guide = load("testing_guide")
    guide.test_signup_sends_welcome(emq_env["EMQ_PREFIX"])
    guide.test_signup_in_eager_mode()


@pytest.mark.django_db(transaction=True)
def test_testing_guide_testcase(emq_env):
    """The guide's Django TestCase with EmqTestMixin passes when unittest runs it."""
    suite = unittest.defaultTestLoader.loadTestsFromTestCase(load("testing_guide").SignupTests)
    out = io.StringIO()
    result = unittest.TextTestRunner(stream=out, verbosity=2).run(suite)
    assert result.wasSuccessful() and result.testsRun == 1, out.getvalue()


def test_time_limits_example(emq_env):
    """A soft limit caught, a job blocked in C timed out twice without holding its slot, an async job
    timed out at its await, sys.exit() recorded as the attempt's failure."""
    load("every_job_ends").example_time_limits()


def test_retry_policy_example(emq_env):
    """retry_on, Discard, Retry(delay=30), a backoff function, and what .using() refuses."""
    guide = load("every_job_ends")
    guide.example_policy()
    guide.example_backoff()


def test_cancel_example(emq_env):
    """A scheduled job cancelled never runs; a running one sees emq.Cancelled and ends cancelled."""
    load("every_job_ends").example_cancel()


def test_pause_example(emq_env):
    """A paused queue is left alone by a burst worker; a paused lane stays paused when the queue resumes."""
    load("every_job_ends").example_pause()


@pytest.mark.django_db
def test_enqueue_and_recurrence_checks_example(emq_env):
    """Arguments that do not fit the job: a TypeError at enqueue, a ValidationError at a row's save."""
    guide = load("every_job_ends")
    guide.example_enqueue_checks()
    guide.example_recurrence_check()


def test_settings_in_examples_are_emq_settings():
    """Every EMQ_* name an example assigns is a setting emq reads (a misspelt one would be ignored)."""
    seen = set()
    for path in EXAMPLES.glob("*.py"):
        names = {n for n in assigned(path) if n.startswith("EMQ_")}
        assert names <= set(DEFAULTS), (path.name, sorted(names - set(DEFAULTS)))
        seen |= names
    assert {"EMQ_URL", "EMQ_RECURRENCES", "EMQ_GROUP_LIMITS", "EMQ_PARTITIONS"} <= seen
    from django.utils.module_loading import import_string

    path = ast.literal_eval(assigned(EXAMPLES / "settings_example.py")["DEFAULT_EXCEPTION_REPORTER_FILTER"])
    assert import_string(path).__name__ == "Filter"


def test_sqlite_options_in_the_docs_are_the_ones_the_check_asks_for():
    """The Deploying guide's SQLite OPTIONS are emq.W002's, and satisfy it."""
    from emq.checks import SQLITE_OPTIONS, sqlite_gaps

    default = _value(assigned(EXAMPLES / "settings_example.py")["DATABASES"], "default")
    options = ast.literal_eval(_value(default, "OPTIONS"))
    assert options == SQLITE_OPTIONS and sqlite_gaps(options) == []


def _value(node: ast.expr, key: str) -> ast.expr:
    """The value expression of a key of a dict display."""
    return next(v for k, v in zip(node.keys, node.values, strict=True) if ast.literal_eval(k) == key)


def test_recurrences_in_settings_are_rows():
    """EMQ_RECURRENCES entries use Recurrence's field names."""
    from emq.models import Recurrence

    fields = {f.name for f in Recurrence._meta.get_fields()}
    for item in ast.literal_eval(assigned(EXAMPLES / "recurrences.py")["EMQ_RECURRENCES"]):
        assert set(item) <= fields, sorted(set(item) - fields)


def test_tasks_and_logging_settings():
    """TASKS names emq's backend with OPTIONS it knows; LOGGING configures the emq logger."""
    from emq.contrib.tasks.backend import EMQ_TASK_OPTIONS, ON_COMMIT

    tasks = ast.literal_eval(assigned(EXAMPLES / "django_tasks.py")["TASKS"])["default"]
    assert tasks["BACKEND"] == "emq.backends.EmqBackend" and set(tasks["OPTIONS"]) <= {*EMQ_TASK_OPTIONS, ON_COMMIT}
    logging = ast.literal_eval(assigned(EXAMPLES / "logging_example.py")["LOGGING"])
    assert logging["version"] == 1 and "emq" in logging["loggers"]


def _command_lines() -> list[list[str]]:
    """Every ``manage.py <emq command> …`` of the deployment files, as argv after manage.py."""
    deploy = EXAMPLES / "deploy"
    lines = []
    for unit in deploy.glob("*.service"):
        lines += [shlex.split(line.split("=", 1)[1]) for line in unit.read_text().splitlines()
                  if line.startswith("ExecStart=")]
    compose = yaml.safe_load((deploy / "compose.yaml").read_text())
    lines += [service["command"] for service in compose["services"].values() if "command" in service]
    return [line[line.index("manage.py") + 1:] for line in lines if "manage.py" in line]


def test_deployment_files_use_real_commands_and_options():
    """The systemd units and the compose file start emq's commands with options those commands take."""
    lines = [argv for argv in _command_lines() if argv[0].startswith("emq_")]
    assert {argv[0] for argv in lines} == {"emq_worker", "emq_pump"}
    for argv in lines:
        parser = load_command_class("emq", argv[0]).create_parser("manage.py", argv[0])
        parser.parse_args(argv[1:])  # exits (SystemExit) on an option the command does not take


def test_compose_file_runs_web_workers_pump_and_valkey():
    """The compose file has what the deploying guide says it has."""
    services = yaml.safe_load((EXAMPLES / "deploy" / "compose.yaml").read_text())["services"]
    assert {"valkey", "web", "worker", "pump", "migrate"} <= set(services)
    assert "noeviction" in services["valkey"]["command"] and "appendonly" in " ".join(services["valkey"]["command"])


def test_every_example_file_is_checked_here():
    """No example sits in docs/examples/ without a test above."""
    checked = set(RUN) | {"scaling", "recurrences", "testing_guide", "settings_example", "logging_example",
                          "every_job_ends", "http_api", "security"}
    # http_api: tests/test_api_live.py, with the guide's curl; security: tests/test_encryption.py, with keys
    assert {p.stem for p in EXAMPLES.glob("*.py")} == checked
