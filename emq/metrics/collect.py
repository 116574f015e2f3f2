"""Every queue's numbers as Prometheus metric families, gathered on each scrape.

Gauges come from the counts and metrics scripts, counters from each queue's ``stats`` hash, both
read for every queue in one pipelined round trip (``engine.snapshots``); the paused lanes in a
second one (``engine.observe.paused_lanes``; a third when some lane is paused); the workers alive from the
worker registry. Labels: ``queue`` (the name users give) and ``partition`` (the physical queue;
the same name when the queue is not partitioned). prometheus-client is imported only here.
"""

from __future__ import annotations

from typing import Any

from ..core import config, registry, topology
from ..core.engine import Snapshot, snapshots
from ..core.engine.observe import paused_lanes
from ..core.logical import partitions
from ..core.records import STATES
from ..errors import ConfigurationError
from ..runtime.pump import lead_ttl_ms

MISSING = 'emq\'s metrics need prometheus-client: pip install "django-emq[metrics]" (or prometheus-client)'
LABELS = ("queue", "partition")
# Counters of the stats hash: (metric name without _total, help, stats field).
COUNTERS = (
    ("emq_jobs_minted", "Jobs minted (enqueued or by a recurrence).", "minted"),
    ("emq_jobs_claimed", "Attempts started: jobs claimed by a worker.", "claimed"),
    ("emq_jobs_failed", "Attempts that failed (each then retried or dead).", "failed"),
    ("emq_jobs_reclaimed", "Leases that expired (a stalled or dead worker) and were reclaimed.", "reclaimed"),
    ("emq_jobs_revived", "Dead jobs retried by an operator.", "revived"),
    ("emq_repeat_skipped", "Recurrence occurrences skipped as missed.", "repeat_skipped"),
)
# Outcomes of finished attempts: label value -> stats field. "cancelled" counts the jobs cancel.lua
# ended; a timed-out attempt counts as retried or dead, like any failure.
OUTCOMES = {"completed": "completed", "retried": "retried", "dead": "dead", "stale": "stale",
            "cancelled": "cancelled"}


def prometheus() -> Any:
    """The prometheus_client module, or a ConfigurationError saying what to install."""
    try:
        import prometheus_client
    except ImportError:
        raise ConfigurationError(MISSING) from None
    return prometheus_client


class QueueCollector:
    """A prometheus-client collector over every registered queue (one scrape, one read)."""

    def __init__(self, prefix: str | None = None) -> None:
        self.prefix = prefix or config.get("EMQ_PREFIX")

    def collect(self) -> list[Any]:
        names = sorted(registry.known_queues(self.prefix))
        queues = partitions(names, prefix=self.prefix)
        snaps = snapshots(queues, lead_ttl_ms())
        workers = registry.workers(self.prefix)
        held = {q.name: held for q, (_, held) in zip(queues, paused_lanes(queues), strict=True)}
        return families(snaps, workers, held)


def families(snaps: list[Snapshot], workers: list[registry.WorkerEntry],
             paused: dict[str, int] | None = None) -> list[Any]:
    """The metric families of these snapshots and live workers; paused: lanes held by a pause, per queue."""
    from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

    def gauge(name: str, doc: str, extra: tuple[str, ...] = ()) -> Any:
        return GaugeMetricFamily(name, doc, labels=[*LABELS, *extra])

    jobs = gauge("emq_jobs", "Jobs in each state now.", ("state",))
    oldest = gauge("emq_oldest_ready_age_seconds", "Age of the oldest ready job: the queue's latency (0: none).")
    expiring = gauge("emq_leases_expiring_soon", "Leases that expire within the next 10 seconds.")
    lanes = gauge("emq_lanes", "Groups with ready work: serving (on the ring), capped (at their limit) or paused.",
                  ("status",))
    halted = gauge("emq_paused", "Whether the queue is paused: no worker claims from it (1) or it runs (0).")
    alive = gauge("emq_workers_alive", "Workers alive that serve the queue.")
    leader = gauge("emq_pump_leader", "Whether a Pump leads the queue (1) or none does (0).")
    tick = gauge("emq_pump_last_tick_age_seconds", "Seconds since the leading Pump's last tick.")
    outcomes = CounterMetricFamily("emq_jobs_finished", "Attempts finished, by outcome.", labels=[*LABELS, "outcome"])
    counters = [(CounterMetricFamily(n, doc, labels=list(LABELS)), field) for n, doc, field in COUNTERS]
    serving = _serving(workers)
    for s in snaps:
        labels = [topology.logical(s.queue), s.queue]
        for state in STATES:
            jobs.add_metric([*labels, state], getattr(s.counts, state))
        oldest.add_metric(labels, (s.oldest_ready_ms or 0) / 1000)
        expiring.add_metric(labels, s.expiring_soon)
        _add_lanes(lanes, labels, s, (paused or {}).get(s.queue, 0))
        halted.add_metric(labels, 1 if s.counts.paused else 0)
        alive.add_metric(labels, serving.get(s.queue, 0))
        leader.add_metric(labels, 1 if s.leader else 0)
        if s.last_tick_ms is not None:
            tick.add_metric(labels, s.last_tick_ms / 1000)
        for name, field in OUTCOMES.items():
            outcomes.add_metric([*labels, name], s.stats.get(field, 0))
        for family, field in counters:
            family.add_metric(labels, s.stats.get(field, 0))
    return [jobs, oldest, expiring, lanes, halted, alive, leader, tick, outcomes, *(f for f, _ in counters)]


def _serving(workers: list[registry.WorkerEntry]) -> dict[str, int]:
    """Live workers per physical queue they serve."""
    serving: dict[str, int] = {}
    for w in workers:
        for q in w.info.get("queues", []):
            serving[q] = serving.get(q, 0) + 1
    return serving


def _add_lanes(lanes: Any, labels: list[str], s: Snapshot, held: int) -> None:
    """Lanes with ready work by status; a paused one is off the ring too, so it is not counted as capped."""
    lanes.add_metric([*labels, "serving"], s.counts.groups_on_ring)
    lanes.add_metric([*labels, "capped"], max(s.capped_groups - held, 0))
    lanes.add_metric([*labels, "paused"], held)
