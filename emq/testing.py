"""Test helpers for projects that use emq: an isolated key prefix on a real server, a drain, asserts.

    # conftest.py
    pytest_plugins = ["emq.testing"]            # fixtures emq_isolated (and emq_server_url to override)

    def test_signup_sends_welcome(emq_isolated):
        signup("ada@example.com")
        assert_enqueued(send_welcome, args=["ada@example.com"])
        run_until_empty()                       # drain in-process, like a burst worker

    class SignupTests(EmqTestMixin, TestCase):  # the same for unittest / Django TestCase
        ...

``EMQ_EAGER = True`` (or ``with eager():``) runs jobs inline at enqueue instead, for projects that
want no worker in their tests; jobs then skip emq's lifecycle (no retries, leases or results).
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator, Sequence
from typing import Any

from django.test.utils import override_settings

try:
    import pytest
except ImportError:  # pytest is optional: the mixin and the helpers work without it
    pytest = None

from .core import audit
from .core.connection import get_client
from .core.logical import LogicalQueue


def delete_prefix(client: Any, prefix: str) -> int:
    """Delete every key under ``prefix:`` (SCAN, never FLUSHALL); returns how many went."""
    gone = 0
    batch: list[str] = []
    for key in client.scan_iter(match=f"{prefix}:*", count=1000):
        batch.append(key)
        if len(batch) >= 500:
            gone += _delete(client, batch)
            batch = []
    if batch:
        gone += _delete(client, batch)
    return gone


def _delete(client: Any, keys: list[str]) -> int:
    # One key a call: on a cluster the keys of different queues live in different slots.
    pipe = client.pipeline(transaction=False)
    for key in keys:
        pipe.delete(key)
    return sum(pipe.execute())


@contextlib.contextmanager
def isolated(url: str | None = None, prefix: str | None = None) -> Iterator[str]:
    """Use a fresh key prefix (and optionally another server) inside the block; clean up after."""
    prefix = prefix or f"emqtest-{uuid.uuid4().hex[:10]}"
    overrides: dict[str, Any] = {"EMQ_PREFIX": prefix}
    if url is not None:
        overrides["EMQ_URL"] = url
    with override_settings(**overrides):
        try:
            yield prefix
        finally:
            delete_prefix(get_client(), prefix)


def eager() -> Any:
    """Run jobs inline at enqueue inside the block (``override_settings(EMQ_EAGER=True)``)."""
    return override_settings(EMQ_EAGER=True)


class EmqTestMixin:
    """For unittest and Django test cases: each test gets a fresh key prefix on a real server.

    ``emq_url`` picks the server (None: the configured one); ``self.emq_prefix`` is the prefix.
    """

    emq_url: str | None = None
    emq_prefix: str = ""

    def setUp(self) -> None:
        super().setUp()
        self.emq_prefix = self.enterContext(isolated(url=self.emq_url))


if pytest is not None:

    @pytest.fixture
    def emq_server_url() -> str | None:
        """The server ``emq_isolated`` uses; None means the configured one. Override it in a conftest."""
        return None

    @pytest.fixture
    def emq_isolated(emq_server_url: str | None) -> Iterator[str]:
        """A fresh key prefix on a real server for one test; its keys are deleted after. Yields the prefix."""
        with isolated(url=emq_server_url) as prefix:
            yield prefix


def run_until_empty(queues: Sequence[str] | None = None, *, concurrency: int = 4) -> None:
    """Run jobs in-process like a burst worker until nothing is ready, active or due within 5 s.

    Ready jobs a rate limit holds back are waited for: they run when the hold ends."""
    from .models import row_sync
    from .runtime.worker import Worker

    Worker(queues, concurrency=concurrency, burst=True, park_timeout=0.5, rows=row_sync()).run()


def _identity(job: Any, queue: str | None) -> tuple[str, str]:
    """The stored name and the queue of an ``@emq.job`` function or a Django ``@task``."""
    if hasattr(job, "module_path"):
        return job.module_path, queue or job.queue_name
    return job.name, queue or job.queue


def enqueued(job: Any, queue: str | None = None) -> list:
    """The jobs of one job function (``@emq.job`` or Django ``@task``) now scheduled or ready in its queue."""
    name, queue = _identity(job, queue)
    found = [q.get_job(i) for q in LogicalQueue(queue).partitions for i in audit.queued_ids(q)]
    return [j for j in found if j.name == name]


def assert_enqueued(job: Any, args: Sequence[Any] | None = None, kwargs: dict | None = None, queue: str | None = None):
    """Assert a job of this function waits in its queue (with these arguments, when given)."""
    jobs = enqueued(job, queue)
    name, queue = _identity(job, queue)
    matching = [
        j for j in jobs
        if (args is None or j.args == list(args)) and (kwargs is None or j.kwargs == kwargs)
    ]
    if not matching:
        seen = ", ".join(f"args={j.args} kwargs={j.kwargs}" for j in jobs) or "none"
        raise AssertionError(f"no job {name} enqueued in {queue!r} with args={args} kwargs={kwargs}; seen: {seen}")
    return matching[0]


def check_invariants(queue: Any) -> None:
    """Assert that every job of a queue sits in exactly one place, the one its state names, and that
    each capped group's active count equals its leased jobs (``emq.core.invariants``).

    ``queue`` is a name, ``emq.queue(...)`` or a physical queue; every partition is walked. It reads
    the whole queue (SCAN of its keys, every set, lane and job: O(jobs + groups) in pages): a helper
    for tests and fault drills on small queues, never for a live queue of millions.
    """
    if isinstance(queue, str):
        queue = LogicalQueue(queue)
    parts = getattr(queue, "partitions", [queue])
    problems = [f"{q.name}: {p}" for q in parts for p in violations(q)]
    if problems:
        raise AssertionError(f"{len(problems)} invariant(s) broken:\n" + "\n".join(problems[:50]))


# -- the walks behind check_invariants (emq.core.audit) ---------------------------------------
PLACE, WALKED = audit.PLACE, audit.WALKED


def violations(q: Any) -> list[str]:
    """Every invariant a physical queue breaks now, one line each (empty: all hold)."""
    return audit.violations(q)


def walk_counts(queue: str) -> dict[str, int]:
    """Jobs per state of a queue found by reading every job hash (SCAN): what ``counts()`` must say.

    O(jobs): for tests. The states are those ``emq.queue(queue).counts()`` reports.
    """
    found = dict.fromkeys(WALKED, 0)
    for q in LogicalQueue(queue).partitions:
        for state, n in audit.walk_counts(q).items():
            found[state] += n
    return found


def assert_counts_exact(queue: str) -> None:
    """Assert a queue's counts equal a walk of its jobs, and its ring and lane sets are consistent:
    the ring holds each group once and exactly the groups of its membership set, every group whose
    lane can be served is on it, and the lane set names exactly the groups with ready work."""
    walked = walk_counts(queue)
    counts = LogicalQueue(queue).counts()
    told = {state: getattr(counts, state) for state in WALKED}
    assert told == walked, f"counts of {queue!r} {told} differ from a walk of its jobs {walked}"
    for q in LogicalQueue(queue).partitions:
        problems = audit.ring_problems(q)
        assert not problems, f"{q.name}: {'; '.join(problems)}"
