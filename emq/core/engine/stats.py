"""Reads of the statistics per job name: a minute a window for the last hour (``_jobstats.lua`` writes them as
finishes settle jobs), ten minutes a window for the last 7 days (the Pump rolls them: ``stats_roll.lua``).

Each read is pipelined over the physical queues asked for (a partitioned queue's partitions) and sums
them (``histogram.merged``): O(windows x queues), whatever the number of jobs or groups.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from redis.client import NEVER_DECODE

from .. import histogram
from ..connection import guard
from ..histogram import Window
from .queue import Queue

TOTAL = ""  # the name of a queue's own statistics: the sum of its job names'


@dataclass(frozen=True)
class Span:
    """A chart's reach: its windows' resolution ("m" a minute, "t" ten minutes), their length and number."""

    name: str
    resolution: str
    step_ms: int
    windows: int


SPANS = {"hour": Span("hour", "m", 60_000, 60), "week": Span("week", "t", 600_000, 7 * 144)}


def names(queues: Sequence[Queue]) -> list[str]:
    """The job names with statistics in these queues (written in the last 7 days), sorted: one pipelined read."""
    if not queues:
        return []
    with guard():
        pipe = queues[0].client.pipeline(transaction=False)
        for q in queues:
            pipe.zrange(q.keys.jstat_names, 0, -1)
        found = {n for listed in pipe.execute() for n in listed}
    found.discard(TOTAL)
    return sorted(found)


def series(queues: Sequence[Queue], name: str, span: Span, now_ms: int) -> list[Window]:
    """The windows of one job name (TOTAL: the queues' own) over a span ending at now_ms (server clock),
    oldest first, summed over the queues; one pipelined round trip."""
    last = now_ms // span.step_ms
    firsts = range(last - span.windows + 1, last + 1)
    raw = _read(queues, [(span.resolution, w, name) for w in firsts])
    return [histogram.merged(w * span.step_ms, [histogram.decode(raw[(q.name, i)]) for q in queues])
            for i, w in enumerate(firsts)]


def totals(queues: Sequence[Queue], names_: Sequence[str], span: Span, now_ms: int, windows: int) -> dict[str, Window]:
    """Per job name, its last ``windows`` windows of a span summed into one (e.g. six ten-minute windows and
    the one under way: the last hour of the names' table); one pipelined round trip."""
    last = now_ms // span.step_ms
    wanted = [(span.resolution, w, n) for n in names_ for w in range(last - windows + 1, last + 1)]
    raw = _read(queues, wanted)
    out = {}
    for j, n in enumerate(names_):
        picks = range(j * windows, (j + 1) * windows)
        out[n] = histogram.merged((last - windows + 1) * span.step_ms,
                                  [histogram.decode(raw[(q.name, i)]) for q in queues for i in picks])
    return out


def _read(queues: Sequence[Queue], wanted: Sequence[tuple[str, int, str]]) -> dict[tuple[str, int], bytes | None]:
    """The raw windows wanted (resolution, window, name) of each queue, by (queue, index in wanted)."""
    if not queues or not wanted:
        return {}
    with guard():
        pipe = queues[0].client.pipeline(transaction=False)
        for q in queues:
            for resolution, w, n in wanted:
                pipe.execute_command("GET", q.keys.stat(resolution, w, n), **{NEVER_DECODE: []})
        replies = pipe.execute()
    return {(q.name, i): replies[k * len(wanted) + i] for k, q in enumerate(queues) for i in range(len(wanted))}
