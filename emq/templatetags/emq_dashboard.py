"""Template helpers of the job dashboard: relative times with the exact time on hover."""

from __future__ import annotations

import re

from django import template
from django.utils.html import format_html
from django.utils.http import urlencode

from ..dashboard import present

register = template.Library()


@register.simple_tag
def reltime(ms, now_ms, countdown: bool = False):
    """A <time> that reads "in 4 s" / "3 min ago", shows the exact time on hover and stays live."""
    if ms in (None, ""):
        return "—"
    if (ms := present.as_ms(ms)) is None:  # a corrupt stored time: shown as text, never a crash
        return "(not a time)"
    cls = "emq-rel emq-countdown" if countdown else "emq-rel"
    return format_html(
        '<time class="{}" data-ms="{}" datetime="{}" title="{}">{}</time>',
        cls, ms, present.exact(ms).replace(" UTC", "Z").replace(" ", "T"), present.exact(ms),
        present.relative(ms, now_ms),
    )


@register.filter
def duration(ms):
    return present.duration(ms)


@register.filter
def first_line(text):
    return present.first_line(text)


@register.filter
def pretty(raw):
    return present.pretty(raw)


@register.filter
def get(mapping, key):
    return mapping.get(key) if mapping else None


@register.simple_tag
def elapsed(start_ms, end_ms):
    """How long from start to end (server ms), "—" when either is unknown: a job's run time."""
    start, end = present.as_ms(start_ms), present.as_ms(end_ms)
    return "—" if start is None or end is None else present.duration(max(end - start, 0))


@register.filter
def group_name(group):
    """A group as a user reads it: the default group (no group given) as "—"."""
    return present.group(group)


@register.filter
def percent(fraction):
    """A stored progress fraction (0..1) as a whole percent, None when there is none."""
    return present.percent(fraction)


@register.filter
def number(n):
    """A count with thousands separated: 5,000."""
    try:
        return f"{int(n):,}"
    except (TypeError, ValueError):
        return n


@register.filter
def exact_time(ms):
    """A stored server ms as the date and time it is, in UTC ("2025-05-01 12:30:04 UTC")."""
    value = present.as_ms(ms)
    return "(not a time)" if value is None else re.sub(r"\.\d{3} UTC$", " UTC", present.exact(value))


@register.simple_tag
def job_name(fn, base, queue, missing="(trimmed)"):
    """A job's name linking to its job-name page (base: that page's URL), or missing for a job gone."""
    if not fn:
        return missing
    query = urlencode({"queue": queue, "fn": fn})
    return format_html('<a href="{}?{}" title="this job name’s page">{}</a>', base, query, fn)
