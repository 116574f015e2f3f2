"""Prometheus metrics: the scrape view over every queue, the worker's histograms, the Grafana dashboard."""

from __future__ import annotations

import json
import re
import time
import urllib.request
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from prometheus_client.parser import text_string_to_metric_families

import emq
from emq.core.engine import Queue
from emq.metrics import collect
from emq.testing import run_until_empty
from tests import jobs
from tests.procs import wait_for

DASHBOARD = Path(emq.__file__).parent / "metrics" / "grafana-dashboard.json"


def scrape(token: str = "secret-token", **headers) -> dict[tuple[str, tuple], float]:
    """Scrape the view with the bearer token; samples keyed by (name, sorted labels)."""
    response = Client().get("/metrics", HTTP_AUTHORIZATION=f"Bearer {token}", **headers)
    assert response.status_code == 200, response.content
    samples = {}
    for family in text_string_to_metric_families(response.content.decode()):
        for s in family.samples:
            samples[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return samples


def value(samples, name: str, **labels) -> float | None:
    """A sample's value; None when the scrape has no such sample (yet)."""
    labels = {"queue": "default", "partition": "default", **labels}
    return samples.get((name, tuple(sorted(labels.items()))))


@pytest.fixture
def metrics_url(settings):
    settings.EMQ_METRICS_TOKEN = "secret-token"


def test_numbers_match_after_completed_dead_and_ready_jobs(emq_env, metrics_url):
    """10 completed, 2 dead, 3 ready: the gauges and counters say so."""
    for n in range(10):
        jobs.add.enqueue(n, n)
    for _ in range(2):
        jobs.always_fails.using(max_attempts=1).enqueue("no")
    run_until_empty()
    for n in range(3):
        jobs.add.enqueue(n, 1)
    s = scrape()
    states = {state: value(s, "emq_jobs", state=state) for state in ("scheduled", "ready", "active", "completed",
                                                                       "dead")}
    assert states == {"scheduled": 0, "ready": 3, "active": 0, "completed": 10, "dead": 2}
    finished = {o: value(s, "emq_jobs_finished_total", outcome=o) for o in ("completed", "retried", "dead", "stale")}
    assert finished == {"completed": 10, "retried": 0, "dead": 2, "stale": 0}
    assert (value(s, "emq_jobs_minted_total"), value(s, "emq_jobs_claimed_total"),
            value(s, "emq_jobs_failed_total")) == (15, 12, 2)
    assert value(s, "emq_oldest_ready_age_seconds") >= 0 and value(s, "emq_workers_alive") == 0


def test_oldest_ready_age_grows_while_no_worker_takes_jobs(emq_env, metrics_url):
    jobs.add.enqueue(1, 1)
    first = value(scrape(), "emq_oldest_ready_age_seconds")
    later = wait_for(lambda: value(scrape(), "emq_oldest_ready_age_seconds") >= first + 0.2, timeout=5,
                     what="the oldest ready job to age")
    assert later and value(scrape(), "emq_jobs", state="ready") == 1


def test_paused_queues_and_lanes_and_cancelled_jobs(emq_env, metrics_url):
    """emq_paused says a queue is paused; a paused lane with work counts as paused, not capped."""
    emq.set_group_limit("default", "capped", 1)
    jobs.add.using(group="capped").enqueue_many([((1, n), {}) for n in range(2)])
    jobs.add.using(group="held").enqueue(2, 2)
    jobs.add.enqueue(3, 3)
    Queue("default").bclaim(1, "w")  # the capped group's first job: the group is at its cap
    emq.queue("default").pause(group="held")
    emq.cancel(jobs.add.enqueue_in(60, 4, 4).id)
    s = scrape()
    lanes = {st: value(s, "emq_lanes", status=st) for st in ("serving", "capped", "paused")}
    assert lanes == {"serving": 1, "capped": 1, "paused": 1} and value(s, "emq_paused") == 0
    assert value(s, "emq_jobs", state="cancelled") == 1
    assert value(s, "emq_jobs_finished_total", outcome="cancelled") == 1
    emq.queue("default").pause()
    assert value(scrape(), "emq_paused") == 1


@pytest.mark.django_db
def test_workers_alive_and_pump_leader(emq_env, metrics_url):
    """A running worker counts as alive for its queue; its Pump leads and ticks."""
    import threading

    from emq.runtime.worker import Worker

    worker = Worker(["default"], concurrency=1, park_timeout=0.5)
    thread = threading.Thread(target=worker.run)
    thread.start()
    try:
        wait_for(lambda: value(scrape(), "emq_workers_alive") == 1, timeout=10, what="the worker to register")
        s = wait_for(lambda: (s := scrape()) and value(s, "emq_pump_leader") == 1 and s, timeout=10, what="a leader")
        assert 0 <= value(s, "emq_pump_last_tick_age_seconds") < 30
    finally:
        worker.stop()
        thread.join(20)


@pytest.mark.django_db
def test_access_needs_staff_or_the_token(emq_env, metrics_url):
    assert Client().get("/metrics").status_code == 401
    assert Client().get("/metrics", HTTP_AUTHORIZATION="Bearer wrong").status_code == 401
    user = get_user_model().objects.create_user("ops", password="x", is_staff=True)
    staff = Client()
    staff.force_login(user)
    assert staff.get("/metrics").status_code == 200


def test_openmetrics_when_asked(emq_env, metrics_url):
    jobs.add.enqueue(1, 1)
    response = Client().get("/metrics", HTTP_AUTHORIZATION="Bearer secret-token",
                            HTTP_ACCEPT="application/openmetrics-text; version=1.0.0")
    assert response["Content-Type"].startswith("application/openmetrics-text")
    assert response.content.rstrip().endswith(b"# EOF")


@pytest.mark.timing
def test_a_scrape_is_one_round_trip_and_100_queues_take_under_100_ms(emq_env, metrics_url):
    """One pipelined round trip reads every queue (plus the worker registry); 100 queues in < 100 ms."""
    for n in range(100):
        jobs.add.using(queue=f"q{n:03}").enqueue(n, n)
    registry = collect.prometheus().CollectorRegistry(auto_describe=False)
    registry.register(collect.QueueCollector())
    best = min(_timed(lambda: collect.prometheus().generate_latest(registry)) for _ in range(5))
    assert best < 0.1, f"scrape of 100 queues took {best * 1000:.0f} ms"
    assert value(scrape(), "emq_jobs", queue="q042", partition="q042", state="ready") == 1


def _timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def test_missing_prometheus_client_says_what_to_install(emq_env, metrics_url, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "prometheus_client", None)
    response = Client().get("/metrics", HTTP_AUTHORIZATION="Bearer secret-token")
    assert response.status_code == 501 and b'pip install "django-emq[metrics]"' in response.content


def exported_names() -> set[str]:
    """Every metric name the code exports: the view's families and the worker's histograms."""
    from emq.core.engine.observe import Snapshot
    from emq.core.records import Counts
    from emq.metrics.exporter import Histograms

    snap = Snapshot("q", Counts(0, 0, 0, 0, 0, 0, None, 0), None, 0, 0, "p", 1, (0, 0), {})
    names = {f.name for f in collect.families([snap], [])}
    prom = collect.prometheus()
    h = Histograms(prom, prom.CollectorRegistry())
    names |= {h.run._name, h.wait._name}
    return names


def test_grafana_dashboard_uses_only_exported_metrics():
    board = json.loads(DASHBOARD.read_text())
    exprs = [t["expr"] for p in board["panels"] for t in p.get("targets", [])]
    used = {re.sub(r"_(total|bucket|sum|count)$", "", m) for e in exprs for m in re.findall(r"\bemq_[a-z_]+", e)}
    exported = exported_names()
    assert used and used <= exported, f"dashboard uses metrics the code does not export: {sorted(used - exported)}"
    assert exported <= used | {"emq_jobs_revived", "emq_repeat_skipped"}, sorted(exported - used)


def test_worker_metrics_port_serves_histograms_across_processes(emq_env, tmp_path):
    """emq_worker --processes 2 --metrics-port: the supervisor serves both children's observations."""
    import socket
    import subprocess

    from tests.procs import manage

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    for _ in range(20):
        jobs.nap.enqueue(0.05)
    proc = manage(emq_env, "emq_worker", "--processes", "2", "--concurrency", "2", "--metrics-port", str(port),
                  "--no-pump", stderr=subprocess.PIPE, text=True)
    try:
        def count() -> float:
            try:
                body = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2).read().decode()
            except OSError:
                return 0
            found = [s.value for f in text_string_to_metric_families(body) for s in f.samples
                     if s.name == "emq_job_run_seconds_count" and s.labels["job"] == "tests.jobs.nap"]
            return sum(found)

        wait_for(lambda: count() == 20, timeout=30, what="20 runs observed")
        pids = {emq.get_job(r).result for r in Queue("default").client.zrange(Queue("default").keys.done, 0, -1)}
        assert len(pids) == 2, "both worker processes ran jobs"
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err[-2000:]


def test_a_partitioned_queue_has_a_series_per_partition(emq_env, metrics_url, settings):
    settings.EMQ_PARTITIONS = {"clicks": 2}
    jobs.add.using(queue="clicks").enqueue_many([((n, n), {}) for n in range(6)])
    s = scrape()
    ready = {p: value(s, "emq_jobs", queue="clicks", partition=p, state="ready") for p in ("clicks#0", "clicks#1")}
    assert sum(ready.values()) == 6 and all(ready.values())
    from emq.cli.status import queue_rows

    assert queue_rows(["clicks"])[0]["ready"] == 6
