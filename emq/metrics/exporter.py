"""``emq_worker --metrics-port``: histograms of this worker's jobs, served for Prometheus to scrape.

Run time (the attempt, measured here) and queue wait (from due to claim, on the server clock) by
queue and job name, in seconds, with Prometheus's default buckets; observed by a ``job_finished``
receiver on the worker's loop thread. Under a supervisor (``--processes N``, or one worker without
``--no-supervise``) the workers are forks: they write their observations to prometheus-client's
multiprocess files (``PROMETHEUS_MULTIPROC_DIR``, a fresh temporary folder unless set, removed at
exit) and the supervisor serves their sum.
"""

from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile
from typing import Any

from ..runtime import signals
from .collect import prometheus

LABELS = ("queue", "job")


class Histograms:
    """The two histograms and a cache of their labelled children (a label lookup costs more than an observe)."""

    def __init__(self, prom: Any, registry: Any) -> None:
        self.run = prom.Histogram("emq_job_run_seconds", "Seconds an attempt ran on this worker.", LABELS,
                                  registry=registry)
        self.wait = prom.Histogram("emq_job_wait_seconds", "Seconds a job waited from due to claim.", LABELS,
                                   registry=registry)
        self.children: dict[tuple[str, str], tuple[Any, Any]] = {}

    def observe(self, sender: Any, *, queue: str, job: Any, duration: float, **kwargs: Any) -> None:
        key = (queue, job.name)
        pair = self.children.get(key)
        if pair is None:
            pair = self.children[key] = (self.run.labels(*key), self.wait.labels(*key))
        pair[0].observe(duration)
        pair[1].observe(job.wait_ms / 1000)


def serve(port: int, forked: bool = False) -> Any:
    """Start the HTTP endpoint on port and observe every attempt from now on; returns the Histograms.
    forked: the workers are forked children of this process, which serves the sum of theirs."""
    if forked:
        _multiprocess_dir()
    prom = prometheus()
    registry = prom.CollectorRegistry(auto_describe=True)
    if forked:
        from prometheus_client import multiprocess

        multiprocess.MultiProcessCollector(registry)
        histograms = Histograms(prom, None)  # the children's files are the registry's source
    else:
        histograms = Histograms(prom, registry)
    signals.job_finished.connect(histograms.observe, weak=False, dispatch_uid="emq-metrics-exporter")
    prom.start_http_server(port, registry=registry)
    return histograms


def _multiprocess_dir() -> None:
    """Point prometheus-client at a folder for the children's values, before its first use."""
    if not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        folder = tempfile.mkdtemp(prefix="emq-metrics-")
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = folder
        pid = os.getpid()
        atexit.register(lambda: os.getpid() == pid and shutil.rmtree(folder, ignore_errors=True))
    values = sys.modules.get("prometheus_client.values")
    if values is not None:  # imported before the folder was set: values chose in-memory storage
        values.ValueClass = values.get_value_class()
