"""Test helpers for projects that use emq: an isolated key prefix on a real server, and a drain.

    from emq.testing import isolated, run_until_empty

    def test_signup_sends_welcome(emq_isolated):      # pytest fixture (see ``emq_isolated``)
        signup("ada@example.com")
        assert_enqueued(send_welcome, args=["ada@example.com"])
        run_until_empty()
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator, Sequence
from typing import Any

from django.test.utils import override_settings

from . import conf
from .connection import get_client


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


def run_until_empty(queues: Sequence[str] | None = None, *, concurrency: int = 4) -> None:
    """Run jobs in-process like a burst worker until nothing is ready, active or due within 5 s."""
    from .worker import Worker

    Worker(queues, concurrency=concurrency, burst=True, park_timeout=0.5).run()


def enqueued(job: Any, queue: str | None = None) -> list:
    """The jobs of one registered job function now scheduled or ready in its queue."""
    from . import partitions

    found = []
    client = get_client()
    for q in partitions.queues(queue or job.queue):
        ids = client.zrange(q.keys.scheduled, 0, -1)
        for group in client.smembers(q.keys.lanes):
            ids += client.lrange(q.keys.lane(group), 0, -1)
        found += [q.get_job(i) for i in ids]
    return [j for j in found if j.name == job.name]


def assert_enqueued(job: Any, args: Sequence[Any] | None = None, kwargs: dict | None = None, queue: str | None = None):
    """Assert a job of this function waits in its queue (with these arguments, when given)."""
    jobs = enqueued(job, queue)
    matching = [
        j for j in jobs
        if (args is None or j.args == list(args)) and (kwargs is None or j.kwargs == kwargs)
    ]
    if not matching:
        seen = ", ".join(f"args={j.args} kwargs={j.kwargs}" for j in jobs) or "none"
        raise AssertionError(
            f"no job {job.name} enqueued in {queue or job.queue!r} with args={args} kwargs={kwargs}; seen: {seen}"
        )
    return matching[0]


def server_prefix() -> str:
    return conf.get("EMQ_PREFIX")
