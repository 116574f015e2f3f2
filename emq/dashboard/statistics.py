"""The dashboard's reads of job statistics: a chart's windows for a queue or one of its job names, and
the table of a queue's job names over the last hour. A logical queue sums its partitions.

Each read is one pipelined round trip, bounded by the windows and the names asked for (NAMES_PAGE
names a page), never by the number of jobs or groups.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..core import config, topology
from ..core.connection import get_client, guard
from ..core.engine import stats
from ..core.histogram import Window, merged
from ..core.logical import partitions
from . import charts
from .links import url

NAMES_PAGE = 50  # job names on one page of the table
SPAN_LABELS = {"hour": "last hour, a bar a minute", "week": "last 7 days, a bar ten minutes"}
POLL = {"hour": 10, "week": 60}  # seconds between two polls of a chart by its page's script


@dataclass(frozen=True)
class Chart:
    """One chart's windows (oldest first) and what they add up to."""

    queue: str  # the logical queue
    name: str  # a job name, or "" for the queue's own
    span: stats.Span
    windows: list[Window]
    total: Window

    @property
    def svg(self) -> str:
        who = f"job {self.name}" if self.name else f"queue {self.queue}"
        return charts.svg(self.windows, f"Jobs and their run and wait times for {who}, {SPAN_LABELS[self.span.name]}",
                          self.span.step_ms)

    def as_dict(self) -> dict:
        """The chart as the page's poll reads it: the figures, and the SVG drawn from them."""
        return {"queue": self.queue, "name": self.name, "span": self.span.name, "step_ms": self.span.step_ms,
                "total": self.total.as_dict(), "windows": [w.as_dict() for w in self.windows], "svg": str(self.svg)}


@dataclass(frozen=True)
class NameRow:
    name: str
    hour: Window  # its last hour summed


def span_of(value: str) -> stats.Span:
    """The span a page asks for (hour unless "week")."""
    return stats.SPANS.get(value, stats.SPANS["hour"])


def chart(queue: str, name: str, span: stats.Span) -> Chart:
    """The windows of a queue's job name ("" the queue's own) over a span ending now (server clock)."""
    logical = topology.logical(queue)
    physical = partitions([logical], prefix=config.get("EMQ_PREFIX"))
    windows = stats.series(physical, name, span, _now_ms())
    return Chart(logical, name, span, windows, merged(windows[0].start_ms, [w.slots for w in windows]))


def chart_context(queue: str, name: str = "", span: str = "hour") -> dict:
    """What ``_chart.html`` shows: the chart of a queue (name "") or of one of its job names, the links to
    its other span, and the URL its page's script polls (the JSON of ``statviews.chart``)."""
    c = chart(queue, name, span_of(span))
    spans = [(key, label, url("statistics", queue=c.queue, name=name, span=key), key == c.span.name)
             for key, label in (("hour", "Last hour"), ("week", "7 days"))]
    return {"data": c, "svg": c.svg, "src": url("chart", queue=c.queue, name=name, span=c.span.name),
            "every": POLL[c.span.name], "spans": spans, "name": name, "queue": c.queue,
            "caption": SPAN_LABELS[c.span.name]}


def names(queue: str, start: int = 0) -> tuple[list[NameRow], int | None]:
    """A page of the queue's job names (those with statistics in the last 7 days), each with its last hour;
    and the start of the next page (None: the last)."""
    physical = partitions([topology.logical(queue)], prefix=config.get("EMQ_PREFIX"))
    listed = stats.names(physical)
    page = listed[start : start + NAMES_PAGE]
    hours = stats.totals(physical, page, stats.SPANS["hour"], _now_ms(), 60)
    following = start + NAMES_PAGE if start + NAMES_PAGE < len(listed) else None
    return [NameRow(n, hours[n]) for n in page], following


def _now_ms() -> int:
    with guard():
        sec, usec = get_client().time()
    return int(sec) * 1000 + int(usec) // 1000
