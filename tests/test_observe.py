"""Operations around each attempt: logs with job context (text and JSON), signals, OpenTelemetry
spans, Sentry events, the completed-job line and shutdown messages; none of it paid when unused."""

from __future__ import annotations

import io
import json
import logging
import signal
import subprocess
import sys
import threading

import pytest

import emq
from emq.core.engine import Queue
from emq.runtime import loglines, logs
from emq.signals import job_finished, job_started
from emq.testing import run_until_empty
from tests import jobs
from tests.procs import ROOT, manage, wait_for


@pytest.fixture
def captured():
    """Records of every logger, through a handler that carries the job filter: (text stream, json stream)."""
    text, as_json = io.StringIO(), io.StringIO()
    handlers = []
    for stream, formatter in ((text, logging.Formatter("%(job_id)s|%(job_name)s|%(queue)s|%(attempt)s|%(message)s")),
                              (as_json, logs.JsonFormatter())):
        h = logging.StreamHandler(stream)
        h.setFormatter(formatter)
        h.addFilter(logs.JobContextFilter())
        logging.getLogger().addHandler(h)
        handlers.append(h)
    yield text, as_json
    for h in handlers:
        logging.getLogger().removeHandler(h)


def test_a_jobs_own_log_record_carries_its_job_in_text_and_json(emq_env, captured):
    text, as_json = captured
    ref = jobs.logs_x.enqueue()
    run_until_empty()
    assert f"{ref.id}|tests.jobs.logs_x|default|1|x" in text.getvalue().splitlines()
    records = [json.loads(line) for line in as_json.getvalue().splitlines()]
    x = [r for r in records if r["message"] == "x"]
    assert len(x) == 1 and {k: x[0][k] for k in ("job_id", "job_name", "queue", "attempt", "logger")} == {
        "job_id": ref.id, "job_name": "tests.jobs.logs_x", "queue": "default", "attempt": 1, "logger": "tests.jobs"}
    done = [r for r in records if r["message"].startswith(f"job id={ref.id}")]
    assert done and done[0]["level"] == "INFO" and done[0]["job_id"] == ref.id
    assert "state=completed" in done[0]["message"]
    outside = [line for line in text.getvalue().splitlines() if line.startswith("||||")]
    assert outside, "records outside a job still format %(job_id)s (as empty)"


def test_a_worker_that_parks_has_said_its_completed_lines(emq_env, captured):
    """A worker gone idle has written every completed line (each is held back one round trip at most), job fields on."""
    from emq.runtime.worker import Worker

    text, _ = captured
    refs = [jobs.add.enqueue(i, 1) for i in range(3)]
    w = Worker(["default"], concurrency=2, pump=False, park_timeout=30)
    t = threading.Thread(target=w.run)
    t.start()
    try:
        wait_for(lambda: all(f"job id={r.id} name=tests.jobs.add state=completed attempt=1 ms=" in text.getvalue()
                             for r in refs), timeout=10, what="the three completed lines, from a parked worker")
        line = next(x for x in text.getvalue().splitlines() if f"job id={refs[0].id}" in x)
        assert line.startswith(f"{refs[0].id}|tests.jobs.add|default|1|")  # the job's fields on the record
    finally:
        w.stop()
        t.join(timeout=10)


def test_a_batch_of_lines_reads_as_the_same_lines_one_by_one(emq_env):
    """``loglines.handle_all`` (one write a batch for a plain StreamHandler) writes what ``Logger.handle`` would:
    same text, the logger's and each handler's filters and levels, propagation, other handlers record by record."""

    class OneByOne(logging.StreamHandler):  # a subclass: handled a record at a time, as before
        pass

    def records() -> list[logging.LogRecord]:
        made = logging.LogRecord("emq.test.batch", logging.INFO, __file__, 0, "job %s n=%s", None, None)
        out = []
        for i in range(5):
            r = logging.makeLogRecord(dict(vars(made)))
            r.args = (f"j{i}", i)
            out.append(r)
        return out

    fmt = "%(asctime)s %(levelname)s %(name)s %(message)s"
    logger, parent = logging.getLogger("emq.test.batch"), logging.getLogger("emq.test")
    batch, single, quiet, up = io.StringIO(), io.StringIO(), io.StringIO(), io.StringIO()
    handlers = [(logger, logging.StreamHandler(batch)), (logger, OneByOne(single)),
                (logger, logging.StreamHandler(quiet)), (parent, logging.StreamHandler(up))]
    for owner, h in handlers:
        h.setFormatter(logging.Formatter(fmt))
        owner.addHandler(h)
    handlers[2][1].setLevel(logging.WARNING)
    handlers[3][1].addFilter(lambda r: r.args[1] % 2 == 0)
    try:
        loglines.handle_all(logger, records())
        assert batch.getvalue() == single.getvalue() and len(batch.getvalue().splitlines()) == 5
        assert batch.getvalue().splitlines()[1].endswith(" INFO emq.test.batch job j1 n=1")
        assert quiet.getvalue() == "" and [x.split()[-1] for x in up.getvalue().splitlines()] == ["n=0", "n=2", "n=4"]
        logger.propagate, logger.disabled = False, False
        loglines.handle_all(logger, records())
        assert len(batch.getvalue().splitlines()) == 10 and len(up.getvalue().splitlines()) == 3
        logger.disabled = True
        loglines.handle_all(logger, records())
        assert len(batch.getvalue().splitlines()) == 10
    finally:
        logger.propagate, logger.disabled = True, False
        for owner, h in handlers:
            owner.removeHandler(h)


@pytest.mark.parametrize("fmt", [
    "%(asctime)s %(levelname)s %(name)s %(message)s",  # emq's own (logs.TEXT)
    "%(job_id)s|%(job_name)s|%(queue)s|%(attempt)s|%(message)s {braces} 100%%",
    "%(attempt)03d %(job_id)-30s %(message)s",  # a field with a width
    "%(message)s %(args)s",  # the args in the line
])
def test_alike_lines_read_as_the_same_lines_one_by_one(emq_env, fmt):
    """``loglines.handle_alike`` (a template record and a row a line, the worker's completed lines)
    writes what ``Logger.handle`` of each line's record would, with any format and any handler."""

    class OneByOne(logging.StreamHandler):
        pass

    template = logging.LogRecord("emq.test.alike", logging.INFO, __file__, 0, "job id=%s {x} 5%% ms=%s", None, None)
    rows = [((f"j{i}", i), (f"j{i}", "tests.jobs.add", "default", i + 1)) for i in range(4)]
    logger = logging.getLogger("emq.test.alike")
    batch, single = io.StringIO(), io.StringIO()
    for stream, kind in ((batch, logging.StreamHandler), (single, OneByOne)):
        h = kind(stream)
        h.setFormatter(logging.Formatter(fmt))
        h.addFilter(logs.JobContextFilter())
        logger.addHandler(h)
    try:
        loglines.handle_alike(logger, template, rows)
        lines = batch.getvalue().splitlines()
        assert batch.getvalue() == single.getvalue() and len(lines) == 4
        assert "job id=j1 {x} 5% ms=1" in lines[1]
    finally:
        for h in list(logger.handlers):
            logger.removeHandler(h)


def test_json_lines_from_a_real_worker(emq_env):
    """EMQ_LOG_FORMAT=json: every line of a worker process is one JSON object; the job's line has its id."""
    ref = jobs.logs_x.enqueue()
    proc = manage({**emq_env, "EMQ_LOG_FORMAT": "json"}, "emq_worker", "--burst", stderr=subprocess.PIPE, text=True)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err[-2000:]
    records = [json.loads(line) for line in err.splitlines() if line.strip()]
    assert any(r["message"] == "x" and r["job_id"] == ref.id and r["logger"] == "tests.jobs" for r in records)
    assert any(r["message"].startswith("worker ") and " up: " in r["message"] for r in records)
    completed = [r for r in records if "state=completed" in r["message"]]
    assert len(completed) == 1 and completed[0]["level"] == "INFO" and " ms=" in completed[0]["message"]


def test_completed_lines_can_be_silenced(emq_env):
    jobs.add.enqueue(1, 2)
    proc = manage({**emq_env, "EMQ_LOG_COMPLETED": "false"}, "emq_worker", "--burst", stderr=subprocess.PIPE,
                  text=True)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0 and "up: " in err and "state=completed" not in err, err


def test_signals_once_per_attempt_after_the_server_recorded_it(emq_env):
    """job_started and job_finished once per attempt; finished sees the server's state and names the outcome."""
    seen = []

    def started(sender, *, job, attempt, **kw):
        seen.append(("started", job.name.rsplit(".", 1)[1], attempt))

    def finished(sender, *, queue, job, state, outcome, duration, exception, attempt, **kw):
        stored = Queue(queue).get_job(job.id).state
        seen.append(("finished", job.name.rsplit(".", 1)[1], attempt, state, outcome, stored,
                     type(exception).__name__ if exception else None, duration >= 0))

    job_started.connect(started, weak=False)
    job_finished.connect(finished, weak=False)
    try:
        jobs.add.enqueue(1, 2)
        run_until_empty(concurrency=1)
        jobs.fail_if_odd.enqueue(1)
        run_until_empty(concurrency=1)
    finally:
        job_started.disconnect(started)
        job_finished.disconnect(finished)
    retry = seen[3]
    # The retry is recorded (ready, or scheduled after its backoff); the same round trip may claim it again.
    assert retry[3] in ("ready", "scheduled") and retry[5] in ("ready", "scheduled", "active")
    assert seen == [
        ("started", "add", 1), ("finished", "add", 1, "completed", "completed", "completed", None, True),
        ("started", "fail_if_odd", 1),
        ("finished", "fail_if_odd", 1, retry[3], "retried", retry[5], "ValueError", True),
        ("started", "fail_if_odd", 2), ("finished", "fail_if_odd", 2, "dead", "dead", "dead", "ValueError", True),
    ]


def test_an_exception_can_name_its_outcome(emq_env, monkeypatch):
    """The hook cancellation and time limits use: an error path registered in ERROR_OUTCOMES names the outcome."""
    from emq.runtime import outcomes

    monkeypatch.setitem(outcomes.ERROR_OUTCOMES, "ValueError", "cancelled")
    names = []
    receiver = lambda sender, outcome, **kw: names.append(outcome)  # noqa: E731
    job_finished.connect(receiver, weak=False)
    try:
        jobs.logs_x.enqueue(fail=True)
        run_until_empty()
    finally:
        job_finished.disconnect(receiver)
    assert names == ["cancelled"]


def test_timed_out_and_cancelled_attempts_are_named_so(emq_env, tmp_path):
    """job_finished says "timed out" for an attempt past its limit, "cancelled" for a cancelled running job."""
    names = []
    receiver = lambda sender, job, outcome, **kw: names.append((job.name.rsplit(".", 1)[1], outcome))  # noqa: E731
    job_finished.connect(receiver, weak=False)
    try:
        jobs.spin_forever.enqueue(str(tmp_path / "spin"))
        running = jobs.until_cancelled.enqueue(str(tmp_path / "cancel"))
        worker = threading.Thread(target=run_until_empty, kwargs={"concurrency": 2})
        worker.start()
        wait_for(lambda: (tmp_path / "cancel").exists(), what="the job to start")
        assert running.cancel()
        worker.join(timeout=30)
    finally:
        job_finished.disconnect(receiver)
    assert sorted(names) == [("spin_forever", "timed out"), ("until_cancelled", "cancelled")]


@pytest.fixture
def spans():
    """A real SDK tracer provider with the in-memory exporter, installed for this test only."""
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from opentelemetry.util._once import Once

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace._TRACER_PROVIDER_SET_ONCE = Once()
    trace.set_tracer_provider(provider)
    yield exporter
    provider.shutdown()
    trace._TRACER_PROVIDER_SET_ONCE = Once()
    trace._TRACER_PROVIDER = None


def test_enqueue_in_a_span_and_a_worker_run_make_linked_producer_and_consumer_spans(emq_env, spans):
    from opentelemetry import trace
    from opentelemetry.trace import SpanKind, StatusCode

    with trace.get_tracer("test").start_as_current_span("request") as request:
        ok = jobs.add.enqueue(2, 3)
        bad = jobs.logs_x.enqueue(fail=True)
    assert "traceparent" in emq.get_job(ok.id).meta["trace"]
    run_until_empty(concurrency=1)
    by_name = {s.name: s for s in spans.get_finished_spans()}
    producer, consumer = by_name["emq enqueue tests.jobs.add"], by_name["emq run tests.jobs.add"]
    assert producer.kind == SpanKind.PRODUCER and producer.parent.span_id == request.get_span_context().span_id
    assert consumer.kind == SpanKind.CONSUMER and consumer.parent.span_id == producer.context.span_id
    assert consumer.context.trace_id == request.get_span_context().trace_id
    assert [link.context.span_id for link in consumer.links] == [producer.context.span_id]
    assert {k: consumer.attributes[k] for k in ("messaging.system", "emq.job.id", "emq.queue", "emq.attempt",
                                                  "emq.group")} == {
        "messaging.system": "emq", "emq.job.id": ok.id, "emq.queue": "default", "emq.attempt": 1, "emq.group": "_"}
    failed = by_name["emq run tests.jobs.logs_x"]
    assert failed.status.status_code == StatusCode.ERROR
    assert [e.name for e in failed.events] == ["exception"]
    assert failed.events[0].attributes["exception.type"] == "ValueError" and bad.id == failed.attributes["emq.job.id"]


@pytest.fixture
def sentry_events():
    """sentry_sdk initialised with a transport that keeps every envelope, for this test only."""
    import sentry_sdk
    from sentry_sdk.transport import Transport

    class Keep(Transport):
        def __init__(self):
            super().__init__()
            self.items = []

        def capture_envelope(self, envelope):
            self.items += [(item.type, item.payload.json) for item in envelope.items]

    transport = Keep()
    sentry_sdk.init(dsn="http://public@127.0.0.1:1/1", transport=transport, traces_sample_rate=1.0,
                    default_integrations=False, auto_enabling_integrations=False)
    yield transport.items
    sentry_sdk.get_global_scope().set_client(None)


def test_failed_attempts_go_to_sentry_tagged_and_runs_are_transactions(emq_env, sentry_events):
    import sentry_sdk

    ref = jobs.logs_x.enqueue(fail=True)
    jobs.add.enqueue(1, 1)
    run_until_empty(concurrency=1)
    sentry_sdk.flush()
    errors = [e for kind, e in sentry_events if kind == "event"]
    transactions = [e for kind, e in sentry_events if kind == "transaction"]
    assert len(errors) == 1 and errors[0]["exception"]["values"][0]["type"] == "ValueError"
    assert {k: errors[0]["tags"][k] for k in ("emq.job_id", "emq.job_name", "emq.queue", "emq.attempt")} == {
        "emq.job_id": ref.id, "emq.job_name": "tests.jobs.logs_x", "emq.queue": "default", "emq.attempt": "1"}
    assert sorted(t["transaction"] for t in transactions) == ["tests.jobs.add", "tests.jobs.logs_x"]


def test_nothing_of_otel_sentry_or_prometheus_is_imported_when_unused(emq_env):
    """emq imports none of them for enqueue and a worker run (redis-py may import OpenTelemetry's API itself)."""
    code = (
        "import django, sys; django.setup()\n"
        "from emq.testing import run_until_empty\n"
        "from tests import jobs\n"
        "jobs.add.enqueue(0, 0)\n"  # the client connects (and imports what it imports)
        "before = set(sys.modules)\n"
        "jobs.add.enqueue(1, 2); jobs.logs_x.enqueue(fail=True); run_until_empty()\n"
        "print(sorted(m for m in set(sys.modules) - before if m.split('.')[0] in "
        "('opentelemetry', 'sentry_sdk', 'prometheus_client')))\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('sentry_sdk', 'prometheus_client')))\n"
    )
    import os

    from tests.procs import TEST_SECRET_KEY

    env = {**os.environ, **emq_env, "DJANGO_SETTINGS_MODULE": "echd_project.settings",
           "DATABASE_URL": "sqlite://:memory:", "SECRET_KEY": TEST_SECRET_KEY}
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-2:] == ["[]", "[]"]


def test_shutdown_says_what_it_does(emq_env):
    """First SIGTERM: waiting for the running jobs; second: releasing them now; no bad file descriptor."""
    jobs.sleep_for.enqueue_many([((30,), {})] * 3)
    proc = manage(emq_env, "emq_worker", "--concurrency", "3", stderr=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: Queue("default").counts().active == 3, timeout=20, what="3 jobs running")
        proc.send_signal(signal.SIGTERM)
        lines: list[str] = []
        try:  # the loop says it on its next pass; 30 s: a CI run once saw no line in 10 s under load
            wait_for(lambda: lines.append(proc.stderr.readline()) or "stopping:" in lines[-1], timeout=30,
                     what="stopping")
        except AssertionError as exc:  # say what the worker said instead, and whether it still runs
            raise AssertionError(f"{exc}; its stderr: {[x for x in lines if x][-20:]!r}; exit {proc.poll()}") from None
        assert lines[-1].rstrip().endswith("stopping: waiting for 3 running jobs (grace 30 s)")
        proc.send_signal(signal.SIGTERM)
        _, rest = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0 and "releasing 3 jobs now" in rest, rest
    assert "Bad file descriptor" not in "".join(lines) + rest
    assert Queue("default").counts().ready == 3
