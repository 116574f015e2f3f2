"""The job-name page's reads: a job name's options as this process registered them, its recurrences, its
queue's rate limits, its newest runs and its failures by error class.

The runs are the newest completed and dead jobs of that exact name in the queue: a bounded slice of each
set (``Queue.sift``: at most RUNS_BUDGET entries read, newest first), so the page costs the same whatever
the backlog; the failures are counted by class on the server among the newest FAILURES dead of that name.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from ..core import config
from ..core.connection import get_client, guard
from ..core.engine.filters import Filters
from ..core.logical import partition
from ..errors import NotRegistered
from ..jobs import declared, lookup
from ..jobs.options import resolved
from ..models import Recurrence
from . import masking, present, rates
from .queries import prefix, server_now
from .scan import Row

RUNS = 20  # newest runs shown
RUNS_BUDGET = 2000  # entries of each finished set read at most for them
FAILURES = 1000  # newest dead jobs of the name counted by class at most
RUN_FIELDS = ("fn", "group", "attempts", "claimed", "error", "args", "kwargs", "result")


@dataclass
class NamePage:
    name: str
    queue: str
    now_ms: int
    registered: bool
    options: list[tuple[str, str]]
    recurrences: list[Any]
    rate_rows: list[rates.RateRow]
    runs: list[tuple[str, Row]]  # ("completed" | "dead", row), newest first
    read: int  # entries read for the runs and failures
    failures: list[tuple[str, int, int]] = field(default_factory=list)  # (class, dead jobs, newest ms)
    failures_seen: int = 0  # dead jobs of the name counted
    declared: dict[str, Any] | None = None  # the recurrence its code declares (emq.job(cron=...))


def options(name: str) -> tuple[bool, str, list[tuple[str, str]]]:
    """Whether this process has the job registered, its queue, and its options as a user reads them."""
    try:
        fn = lookup(name)
    except NotRegistered:
        return False, config.get("EMQ_DEFAULT_QUEUE"), []
    o, r = fn.options, resolved(name, fn.options)
    rows = [("queue", fn.queue), ("attempts", f"at most {r['max_attempts']}"),
            ("retry wait", present.backoff(",".join(f"{x:g}" for x in r["backoff"])) if not callable(o.backoff)
             else f"{getattr(o.backoff, '__qualname__', 'a function')}(attempt, error)"),
            ("time limit", present.limits(f"{r['timeout_ms']},{r['soft_timeout_ms']}")),
            ("lease", present.duration(r["lease_ms"])), ("stalls before dead", str(r["max_stalled"]))]
    extra = {"group": o.group if not callable(o.group) else "by its arguments", "priority": o.priority,
             "unique for": o.unique_for and f"{o.unique_for:g} s", "debounce": o.debounce and f"{o.debounce:g} s"}
    rows += [(k, str(v)) for k, v in extra.items() if v not in (None, "", 0)]
    return True, fn.queue, rows


def page(name: str, queue: str) -> NamePage:
    """The job name's page in queue (its own queue when the request named none)."""
    registered, own, opts = options(name)
    q = partition(queue or own, prefix=prefix())
    with guard():
        now = server_now(get_client())
    only = Filters(fn=name)
    done = q.sift("completed", only, budget=RUNS_BUDGET, want=RUNS, fields=RUN_FIELDS)
    dead = q.sift("dead", only, budget=RUNS_BUDGET, want=FAILURES, fields=(), classes=True)
    newest_dead = q.jobs([e.id for e in dead.entries[:RUNS]], RUN_FIELDS)
    runs = [("completed", Row(e.id, e.score, masking.clean(e.fields))) for e in done.entries]
    runs += [("dead", Row(e.id, e.score, masking.clean(f))) for e, f in zip(dead.entries, newest_dead, strict=False)]
    runs.sort(key=lambda r: -r[1].score)
    by_class = Counter(e.fields["class"] for e in dead.entries)
    newest = {}
    for e in dead.entries:
        newest.setdefault(e.fields["class"], e.score)
    failures = [(c, n, newest[c]) for c, n in by_class.most_common()]
    recurrences = list(Recurrence.objects.filter(job=name).order_by("name")[:20])
    return NamePage(name, q.name, now, registered, opts, recurrences, rates.rows(q)[0], runs[:RUNS],
                    done.read + dead.read, failures, len(dead.entries), declared.get(name))
