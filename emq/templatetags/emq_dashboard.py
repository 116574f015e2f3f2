"""Template helpers of the job dashboard: relative times with the exact time on hover."""

from __future__ import annotations

from django import template
from django.utils.html import format_html

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
