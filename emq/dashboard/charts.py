"""Charts of job statistics as SVG drawn on the server: no script library, nothing fetched from elsewhere.

One chart, two panels over the same windows: jobs settled a window (completed, and failed stacked on
them), then run and wait times on a log scale (p50 and p95 of runs, p95 of waits). Colours come from
classes in dashboard.css, so the admin's light and dark themes both apply; each window's title says
its figures (a tooltip, and what a screen reader reads).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from ..core.histogram import Window
from . import present

WIDTH, LEFT, RIGHT = 720, 52, 8  # px: the chart, the axis labels' room, the right margin
BARS_TOP, BARS_H = 8, 96  # the throughput panel
LINES_TOP, LINES_H = 128, 84  # the latency panel
HEIGHT = LINES_TOP + LINES_H + 22  # the time axis below
SERIES = (("run", "p50", "emq-svg-p50"), ("run", "p95", "emq-svg-p95"), ("wait", "p95", "emq-svg-wait"))


def ms_text(ms: float | None) -> str:
    """A duration for people: "0 ms", "3.2 ms", "240 ms", "1.5 s", "2.0 min"."""
    if ms is None:
        return "—"
    if ms < 10:
        return f"{ms:.1f} ms" if ms else "0 ms"
    if ms < 1000:
        return f"{ms:.0f} ms"
    if ms < 60_000:
        return f"{ms / 1000:.1f} s"
    return f"{ms / 60_000:.1f} min"


def svg(windows: Sequence[Window], label: str, step_ms: int) -> SafeString:
    """The chart of windows (oldest first, step_ms apart), labelled for screen readers."""
    if not windows:
        return mark_safe("")
    x = _xs(len(windows))
    parts = [f'<svg class="emq-svg" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="{escape(label)}" '
             f'preserveAspectRatio="none" xmlns="http://www.w3.org/2000/svg">']
    parts += _bars(windows, x)
    parts += _lines(windows, x)
    parts += _time_axis(windows, step_ms)
    parts.append("</svg>")
    return mark_safe("".join(parts))


def _xs(n: int) -> list[float]:
    """The left edge of each window's slot, n slots across the plot."""
    width = (WIDTH - LEFT - RIGHT) / n
    return [LEFT + i * width for i in range(n + 1)]


def _bars(windows: Sequence[Window], x: list[float]) -> list[str]:
    peak = max([w.completed + w.failed for w in windows] + [1])
    out = [f'<text class="emq-svg-label" x="{LEFT - 4}" y="{BARS_TOP + 10}" text-anchor="end">{peak:,}</text>',
           f'<text class="emq-svg-label" x="{LEFT - 4}" y="{BARS_TOP + BARS_H}" text-anchor="end">0</text>',
           f'<line class="emq-svg-grid" x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{BARS_TOP + BARS_H}" '
           f'y2="{BARS_TOP + BARS_H}"/>']
    for i, w in enumerate(windows):
        if not w.settled:  # nothing to draw nor to say: a week's chart is mostly empty windows
            continue
        left, width = x[i] + 0.5, max(x[i + 1] - x[i] - 1, 0.5)
        ok, bad = BARS_H * w.completed / peak, BARS_H * w.failed / peak
        base = BARS_TOP + BARS_H
        out.append(f"<g><title>{escape(_title(w))}</title>"
                   f'<rect class="emq-svg-hover" x="{left:.1f}" y="{BARS_TOP}" width="{width:.1f}" '
                   f'height="{LINES_TOP + LINES_H - BARS_TOP}"/>')
        if ok:
            out.append(f'<rect class="emq-svg-ok" x="{left:.1f}" y="{base - ok:.1f}" width="{width:.1f}" '
                       f'height="{ok:.1f}"/>')
        if bad:
            out.append(f'<rect class="emq-svg-fail" x="{left:.1f}" y="{base - ok - bad:.1f}" width="{width:.1f}" '
                       f'height="{bad:.1f}"/>')
        out.append("</g>")
    return out


def _lines(windows: Sequence[Window], x: list[float]) -> list[str]:
    """p50 and p95 of runs and p95 of waits, on a log scale with a gridline a decade."""
    values = [[getattr(getattr(w, kind), q) for w in windows] for kind, q, _ in SERIES]
    seen = [v for series in values for v in series if v]
    low = math.floor(math.log10(min(seen))) if seen else 0
    high = max(math.ceil(math.log10(max(seen))) if seen else 3, low + 1)
    out = []
    for decade in range(low, high + 1):
        y = _y(10**decade, low, high)
        out.append(f'<line class="emq-svg-grid" x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y:.1f}" y2="{y:.1f}"/>'
                   f'<text class="emq-svg-label" x="{LEFT - 4}" y="{y + 4:.1f}" text-anchor="end">'
                   f"{_decade(decade)}</text>")
    for (_, _, cls), series in zip(SERIES, values, strict=True):
        points = [f"{(x[i] + x[i + 1]) / 2:.1f},{_y(v, low, high):.1f}" for i, v in enumerate(series) if v is not None]
        if len(points) == 1:
            cx, cy = points[0].split(",")
            out.append(f'<circle class="{cls}" cx="{cx}" cy="{cy}" r="2"/>')
        elif points:
            out.append(f'<polyline class="{cls}" points="{" ".join(points)}"/>')
    return out


def _decade(d: int) -> str:
    """A gridline's label: "1 ms", "100 ms", "10 s", "0.1 ms"."""
    ms = 10.0**d
    if ms < 1:
        return f"{ms:g} ms"
    return f"{ms:.0f} ms" if ms < 1000 else (f"{ms / 1000:.0f} s" if ms < 60_000 else f"{ms / 60_000:.0f} min")


def _y(ms: float, low: int, high: int) -> float:
    """Where a duration sits in the latency panel (log scale; 0 ms and below 10^low at its foot)."""
    if ms <= 0:
        return LINES_TOP + LINES_H
    share = (math.log10(ms) - low) / (high - low)
    return LINES_TOP + LINES_H * (1 - min(max(share, 0.0), 1.0))


def _time_axis(windows: Sequence[Window], step_ms: int) -> list[str]:
    y = HEIGHT - 6
    first, last = windows[0].start_ms, windows[-1].start_ms + step_ms
    fmt = (lambda ms: present.exact(ms)[11:16]) if last - first <= 86_400_000 else (lambda ms: present.exact(ms)[5:16])
    return [f'<text class="emq-svg-label" x="{LEFT}" y="{y}">{fmt(first)} UTC</text>',
            f'<text class="emq-svg-label" x="{WIDTH - RIGHT}" y="{y}" text-anchor="end">{fmt(last)} UTC</text>']


def _title(w: Window) -> str:
    when = present.exact(w.start_ms)[:16]
    counts = f"{w.completed:,} completed, {w.failed:,} failed ({w.retried:,} retried), {w.dead:,} dead"
    if not w.run.count:
        return f"{when} UTC: {counts}"
    return (f"{when} UTC: {counts}; run p50 {ms_text(w.run.p50)}, p95 {ms_text(w.run.p95)}, max "
            f"{ms_text(w.run.max_ms)}; wait p50 {ms_text(w.wait.p50)}, p95 {ms_text(w.wait.p95)}, max "
            f"{ms_text(w.wait.max_ms)}")
