"""Flow control, part four: a worker's queues in turn, by weight (high:5,low:1), or strictly in order."""

from __future__ import annotations

import subprocess
import threading

import pytest

import emq
from emq.core.engine import Queue
from emq.runtime.order import QueueOrder, parse
from emq.runtime.worker import Worker
from tests import jobs
from tests.procs import manage, wait_for


def starts(queue: str, refs) -> list[int]:
    q = emq.queue(queue)
    found = (q.get_job(r.id).started for r in refs)
    return sorted(int(s.timestamp() * 1000) for s in found if s)


def run_until(worker: Worker, done) -> None:
    t = threading.Thread(target=worker.run, daemon=True)
    t.start()
    try:
        wait_for(done, timeout=30, every=0.05)
    finally:
        worker.stop()
        t.join(10)


def test_weights_parse_and_spread_the_first_turn():
    assert parse(["high:5", "low"]) == (["high", "low"], {"high": 5, "low": 1})
    order, firsts = QueueOrder([5, 1]), []
    for _ in range(12):  # each pass claims 1 job from the queue it asks first
        first = order.next()[0]
        firsts.append(first)
        order.charge([1 if i == first else 0 for i in range(2)])
    assert firsts.count(0) == 10 and firsts.count(1) == 2 and firsts[:6] != [0] * 5 + [1]  # spread, not a run
    uneven = QueueOrder([5, 1])  # a pass may claim many: the jobs still follow the weights
    took = [0, 0]
    for n in [4, 1, 3, 4, 2, 1, 4, 4] * 30:
        first = uneven.next()[0]
        took[first] += n
        uneven.charge([n if i == first else 0 for i in range(2)])
    assert 4.5 <= took[0] / took[1] <= 5.5, took
    assert [QueueOrder([1, 1]).next()[0] for _ in range(1)] == [1]
    with pytest.raises(emq.ConfigurationError):
        parse(["high:0"])
    with pytest.raises(emq.ConfigurationError):
        QueueOrder([5, 1], strict=True)


def test_high_5_low_1_starts_five_to_one_while_both_are_full(emq_env):
    high = jobs.add.using(queue="high").enqueue_many([((i, 0), {}) for i in range(1500)])
    low = jobs.add.using(queue="low").enqueue_many([((i, 0), {}) for i in range(1500)])
    w = Worker(["high:5", "low:1"], concurrency=4, pump=False, park_timeout=0.5)
    run_until(w, lambda: Queue("low").counts().completed + Queue("high").counts().completed >= 1200)
    h, lo = starts("high", high), starts("low", low)
    last = min(max(h), max(lo))  # both queues were full until here
    n_high, n_low = sum(1 for s in h if s < last), sum(1 for s in lo if s < last)
    assert n_low > 50, (n_high, n_low)
    assert 4.5 <= n_high / n_low <= 5.5, (n_high, n_low)


def test_strict_never_starts_low_while_high_has_ready_work(emq_env):
    low = jobs.add.using(queue="low").enqueue_many([((i, 0), {}) for i in range(100)])
    high = jobs.add.using(queue="high").enqueue_many([((i, 0), {}) for i in range(400)])
    w = Worker(["high", "low"], concurrency=4, pump=False, park_timeout=0.5, strict=True)
    run_until(w, lambda: Queue("low").counts().completed >= 100)
    assert min(starts("low", low)) >= max(starts("high", high))


def test_the_command_takes_weights_and_strict(emq_env, tmp_path):
    """--strict with weights is refused before anything runs; a weighted --queues starts a worker."""
    bad = manage(emq_env, "emq_worker", "--queues", "high:5,low", "--strict", "--burst",
                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _, err = bad.communicate(timeout=60)
    assert bad.returncode != 0 and "--strict" in err
    ref = jobs.add.using(queue="low").enqueue(1, 2)
    ok = manage(emq_env, "emq_worker", "--queues", "high:5,low:1", "--burst", "--no-pump")
    assert ok.wait(timeout=60) == 0
    assert emq.get_job(ref.id, "low").state == "completed"
