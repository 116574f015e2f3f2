"""Fair lanes and the Metronome: groups share a queue fairly, idle workers park instead of polling."""

from __future__ import annotations

import json
import statistics
import threading
import time
import uuid
from collections import Counter

import pytest
import redis
from django.test.utils import override_settings

import emq
from emq.core import embedded
from emq.core.engine import Queue
from emq.core.records import Outcome
from emq.testing import check_invariants, delete_prefix, run_until_empty
from tests import jobs
from tests.fleet import Fleet, fleet_for
from tests.procs import no_new_connection, wait_for


def groups_of(claims) -> list:
    return [c.args[0] for c in claims]


@pytest.fixture
def fleet(emq_env, tmp_path):
    yield from fleet_for(emq_env, tmp_path)


# -- the ring, against the server --------------------------------------------------------------


def test_one_bclaim_rotates_the_ring_between_groups_and_keeps_fifo_in_a_lane(emq_env):
    q = Queue("default")
    for g in "abc":
        jobs.add.using(group=g).enqueue_many([((g, i), {}) for i in range(10)])
    claims = q.bclaim(7, "w")
    assert [(c.args[0], c.args[1]) for c in claims] == [
        ("a", 0), ("b", 0), ("c", 0), ("a", 1), ("b", 1), ("c", 1), ("a", 2),
    ]
    assert groups_of(q.bclaim(4, "w")) == ["b", "c", "a", "b"], "the next claim goes on where the ring stopped"


def test_group_is_a_name_or_a_function_of_the_arguments(emq_env):
    q = Queue("default")
    a = jobs.for_tenant.enqueue(7, 1)
    b = jobs.add.using(group="tenant-9").enqueue(1, 1)
    c = jobs.add.enqueue(1, 2)
    assert [q.get_job(r.id).group for r in (a, b, c)] == ["tenant-7", "tenant-9", "_"]
    assert set(q.client.smembers(q.keys.lanes)) == {"tenant-7", "tenant-9", "_"}


def test_an_empty_lane_leaves_no_key_behind(emq_env, client):
    """After a drain, nothing is kept for groups without work: no lane, ring, lane set or active count."""
    jobs.for_tenant.enqueue_many([((t, n), {}) for t in range(20) for n in range(3)])
    jobs.add.enqueue_many([((1, 1), {}) for _ in range(5)])
    run_until_empty()
    q = Queue("default")
    assert q.counts().completed == 65
    left = {k.removeprefix(q.keys.ns).split(":")[0] for k in client.scan_iter(match=f"{q.keys.ns}*")}
    assert not left & {"lane", "ring", "lanes", "active"}, left


def test_many_skewed_groups_are_served_within_one_of_each_other_in_any_1000_claims(emq_env):
    """100 groups of very different sizes, claimed in batches of mixed sizes."""
    q = Queue("default")
    sizes = [1 + (i * i * 37) % 200 for i in range(100)]
    for g, size in enumerate(sizes):
        jobs.add.using(group=f"g{g}").enqueue_many([((g, i), {}) for i in range(size)])
    order: list = []
    batches = [1, 7, 50, 3, 200, 13, 1000]
    while len(order) < sum(sizes):
        claims = q.bclaim(batches[len(order) % len(batches)], "w")
        assert claims, "ready work left but nothing claimed"
        order.extend((c.args[0], c.args[1]) for c in claims)
    assert all(order[i][1] < order[j][1] for i, j in _pairs_by_group(order)), "first in, first out in a lane"
    worst = _worst_window_spread([g for g, _ in order], window=1000)
    print(f"\n{len(order)} claims of 100 skewed groups: worst spread over any 1,000-claim window = {worst}")
    assert worst <= 1


def _pairs_by_group(order):
    last: dict = {}
    for pos, (g, _) in enumerate(order):
        if g in last:
            yield last[g], pos
        last[g] = pos


def _worst_window_spread(seq: list, window: int) -> int:
    """Largest (max - min) service in a window among groups that still had work after it."""
    last = {g: pos for pos, g in enumerate(seq)}
    counts = Counter(seq[:window])
    worst = 0
    for start in range(0, len(seq) - window + 1):
        if start:
            counts[seq[start - 1]] -= 1
            counts[seq[start + window - 1]] += 1
        end = start + window
        busy = [counts[g] for g, pos in last.items() if pos >= end]
        if len(busy) > 1:
            worst = max(worst, max(busy) - min(busy))
    return worst


def test_a_group_at_its_cap_leaves_the_ring_and_comes_back_on_finish_or_reclaim(emq_env):
    q = Queue("default")
    emq.set_group_limit("default", "capped", 1)
    jobs.add.using(group="capped").enqueue_many([(("capped", i), {}) for i in range(3)])
    jobs.add.using(group="free").enqueue_many([(("free", i), {}) for i in range(5)])
    first = q.bclaim(4, "w")
    assert groups_of(first) == ["capped", "free", "free", "free"]
    assert q.client.lrange(q.keys.ring, 0, -1) == ["free"]
    q.client.delete(q.keys.wake)
    capped = first[0]
    q.finish([Outcome(capped.id, capped.token, "completed", "null")])
    assert "capped" in q.client.lrange(q.keys.ring, 0, -1) and q.client.llen(q.keys.wake) == 1
    (again,) = [c for c in q.bclaim(2, "w") if c.args[0] == "capped"]
    assert q.client.lrange(q.keys.ring, 0, -1) == ["free"]
    q.extend_lock(again.id, again.token, 1)
    wait_for(lambda: q.sweep(), what="the capped job's lease expired and was swept")
    assert "capped" in q.client.lrange(q.keys.ring, 0, -1)
    emq.set_group_limit("default", "capped", None)
    assert int(q.client.hget(q.keys.active, "capped") or 0) == 0


def test_a_cap_set_while_its_group_runs_counts_the_jobs_already_running(emq_env):
    """Only leases under a cap are counted, so a new cap counts the group's leases of the moment:
    2 running and a cap of 2 leave the group off the ring until one of them ends."""
    q = Queue("default")
    jobs.add.using(group="late").enqueue_many([(("late", i), {}) for i in range(4)])
    jobs.add.using(group="other").enqueue("other", 0)
    running = [c for c in q.bclaim(3, "w") if c.args[0] == "late"]
    assert len(running) == 2 and q.client.hget(q.keys.active, "late") is None
    emq.set_group_limit("default", "late", 2)
    assert q.client.hget(q.keys.active, "late") == "2" and "late" not in q.client.lrange(q.keys.ring, 0, -1)
    emq.set_group_limit("default", "late", 3)  # a changed cap counts nothing twice
    assert q.client.hget(q.keys.active, "late") == "2"
    assert groups_of(q.bclaim(5, "w")) == ["late"]
    q.finish([Outcome(c.id, c.token, "completed", "null") for c in running])
    assert q.client.hget(q.keys.active, "late") == "1"
    assert groups_of(q.bclaim(5, "w")) == ["late"]
    check_invariants(q)


def test_a_count_left_by_an_older_emq_does_not_keep_a_new_cap_shut(emq_env):
    """An older emq counted every group's leases, and only held ones are given back now: a new cap
    sets the count to the leases there are, so a stale 3 does not hold a group capped at 2 off."""
    q = Queue("default")
    jobs.add.using(group="old").enqueue_many([(("old", i), {}) for i in range(3)])
    q.client.hset(q.keys.active, "old", 3)  # as three leases of an older emq left it, long finished
    emq.set_group_limit("default", "old", 2)
    assert q.client.hget(q.keys.active, "old") is None
    assert groups_of(q.bclaim(5, "w")) == ["old", "old"]
    check_invariants(q)


def test_group_limits_from_settings_are_applied(emq_env, settings):
    settings.EMQ_GROUP_LIMITS = {"default": {"slow": 2, "slower": 1}, "mail": {"bulk": 5}}
    assert emq.apply_group_limits(["default"]) == 2
    q = Queue("default")
    assert q.client.hgetall(q.keys.caps) == {"slow": "2", "slower": "1"}
    settings.EMQ_GROUP_LIMITS = {"default": {"slow": 0}}
    with pytest.raises(emq.ConfigurationError, match=r"EMQ_GROUP_LIMITS\['default'\]\['slow'\]"):
        emq.apply_group_limits()



def test_every_change_that_makes_work_visible_pushes_one_wake_token(emq_env):
    """Mint, promotion, release, reclaim, a retry due now and a cap lifted each leave a token (at most one)."""
    q = Queue("default")

    def woke(action) -> bool:
        q.client.delete(q.keys.wake)
        action()
        return q.client.llen(q.keys.wake) == 1

    assert woke(lambda: jobs.add.enqueue_many([((1, i), {}) for i in range(3)]))
    a, b, c = q.bclaim(3, "w")
    assert woke(lambda: q.release_lock(a.id, a.token))
    assert woke(lambda: q.finish([Outcome(b.id, b.token, "failed", "ValueError: x", 0)]))
    q.extend_lock(c.id, c.token, 1)
    assert woke(lambda: wait_for(lambda: q.sweep(), what="lease expired"))
    jobs.add.enqueue_in(0.01, 2, 2)
    assert woke(lambda: wait_for(lambda: q.tick("pump", 5000, 5000).promoted, what="promoted"))
    emq.set_group_limit("default", "g", 1)
    jobs.add.using(group="g").enqueue_many([((4, i), {}) for i in range(2)])
    assert [x.args for x in q.bclaim(5, "w") if x.args[0] == 4] == [[4, 0]]
    assert woke(lambda: emq.set_group_limit("default", "g", None))
    assert woke(lambda: [jobs.add.enqueue(5, i) for i in range(3)]), "one token, not one a mint"


# -- real worker processes ---------------------------------------------------------------------


def test_a_big_group_first_does_not_starve_ten_small_ones(emq_env, fleet, tmp_path):
    """A has 5,000 ready jobs first, then B..K 10 each: all 100 small jobs are among the first 120 done."""
    out = tmp_path / "order"
    jobs.touch.using(group="A").enqueue_many([((str(out), "A"), {}) for _ in range(5000)])
    small = [chr(c) for c in range(ord("B"), ord("K") + 1)]
    for g in small:
        jobs.touch.using(group=g).enqueue_many([((str(out), g), {}) for _ in range(10)])
    fleet.worker("--concurrency", "1")
    wait_for(lambda: out.exists() and len(out.read_text().split()) >= 120, timeout=30, what="120 completions")
    order = out.read_text().split()[:120]
    last_small = max(i for i, g in enumerate(order) if g != "A") + 1
    print(f"\nbig group first: the 100 small-group jobs were done by completion {last_small} of 120")
    assert Counter(order) == Counter({"A": 20, **{g: 10 for g in small}})


def test_a_group_capped_at_2_never_runs_more_than_2_under_4_workers(emq_env, fleet):
    """The cap comes from EMQ_GROUP_LIMITS at worker start; the server's count is sampled throughout."""
    q = Queue("default")
    limits = json.dumps({"default": {"capped": 2}})
    for _ in range(4):
        fleet.worker("--concurrency", "4", env={"EMQ_GROUP_LIMITS": limits})
    fleet.wait_workers(4)
    assert q.client.hget(q.keys.caps, "capped") == "2"
    counter = f"{emq_env['EMQ_PREFIX']}:test:running"
    jobs.count_active.using(group="capped").enqueue_many([((counter, 0.05), {}) for _ in range(30)])
    jobs.nap.enqueue_many([((0.05,), {}) for _ in range(60)])
    samples: list[int] = []
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            samples.append(int(q.client.hget(q.keys.active, "capped") or 0))

    sampler = threading.Thread(target=sample)
    sampler.start()
    try:
        wait_for(lambda: q.counts().completed == 90, timeout=30, what="all 90 jobs completed")
    finally:
        stop.set()
        sampler.join()
    seen = [int(x) for x in q.client.lrange(f"{counter}:seen", 0, -1)]
    print(f"\ncap 2 under 4 workers: {len(samples)} server samples, max active {max(samples)}; "
          f"max running seen by the jobs {max(seen)}")
    assert max(samples) == 2 and max(seen) <= 2 and len(seen) == 30


def test_a_worker_of_two_queues_is_woken_by_either(emq_env, fleet):
    """One parker per queue (their keys live in different slots): a mint in the second queue wakes it."""
    fleet.worker("--queues", "first,second", "--concurrency", "2")
    fleet.wait_workers(1)
    for name in ("second", "first"):
        q = Queue(name)
        wait_for(lambda q=q: _parked_on(q), timeout=10, what=f"parked on {name}")
        sent = time.time()
        ref = jobs.started_at.using(queue=name).enqueue()
        started = wait_for(lambda q=q, ref=ref: q.get_job(ref.id).result, timeout=5, what=f"job in {name} ran")
        assert started - sent < 1.0


def _parked_on(q: Queue) -> bool:
    return any(c.get("cmd") == "blpop" for c in q.client.client_list())


# -- parked workers on a private server (INFO commandstats must see only them) ------------------


@pytest.fixture(scope="module")
def parked(tmp_path_factory):
    """Four idle workers × concurrency 4, each with its Pump, on a server of their own."""
    folder = tmp_path_factory.mktemp("private-valkey")
    url = embedded.start(folder, persist=False)
    env = {"EMQ_URL": url, "EMQ_PREFIX": f"emqtest-{uuid.uuid4().hex[:10]}"}
    crew = Fleet(env, folder)
    raw = redis.Redis.from_url(url, decode_responses=True)
    try:
        with override_settings(**env):
            procs = [crew.worker("--concurrency", "4", "--no-supervise") for _ in range(4)]  # CPU and pids: theirs
            crew.wait_workers(4)
            yield env, raw, procs
            delete_prefix(raw, env["EMQ_PREFIX"])
    finally:
        crew.reap()
        try:
            raw.shutdown(nosave=True, now=True)
        except redis.ConnectionError:
            pass


def _all_parked(raw) -> bool:
    """Four parkers and the leading Pump are blocked on their wake lists."""
    return raw.info("clients")["blocked_clients"] >= 5


@pytest.fixture
def private(parked):
    env, raw, procs = parked
    with override_settings(**env):
        wait_for(lambda: _all_parked(raw), timeout=20, what="4 workers parked")
        yield raw, procs


def _cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / 100  # utime + stime, in clock ticks of 1/100 s


@pytest.mark.timing
def test_four_idle_workers_send_at_most_40_commands_in_10_seconds(private):
    """Counted from INFO commandstats, where each call a script makes counts too; ~0 CPU meanwhile."""
    raw, procs = private
    wait_for(lambda: no_new_connection(raw), timeout=30, what="the workers done starting")
    raw.config_resetstat()
    cpu = [_cpu_seconds(p.pid) for p in procs]
    time.sleep(10)  # the measurement window itself
    stats = raw.info("commandstats")
    cpu = [round(_cpu_seconds(p.pid) - c, 2) for p, c in zip(procs, cpu, strict=True)]
    calls = {k.removeprefix("cmdstat_"): v["calls"] for k, v in stats.items()}
    for mine in ("config|resetstat", "info", "client|id", "client|list"):
        calls.pop(mine, None)
    total = sum(calls.values())
    sent = sum(calls.get(c, 0) for c in ("evalsha", "eval", "fcall", "blpop", "set", "sadd", "ping"))
    print(f"\n4 idle workers, 10 s: {total} calls in commandstats {calls}, {sent} of them sent by the workers "
          f"(the rest ran inside scripts); CPU seconds per worker {cpu}")
    assert total <= 40
    assert max(cpu) <= 0.2


@pytest.mark.timing
def test_a_job_enqueued_to_idle_workers_starts_within_5_ms_at_the_median(private):
    raw, _ = private
    q = emq.queue("default")
    latencies = []
    for _ in range(21):
        wait_for(lambda: _all_parked(raw), timeout=20, what="workers parked again")
        sent = time.time()
        ref = jobs.started_at.enqueue()
        started = wait_for(lambda ref=ref: q.get_job(ref.id).result, timeout=5, what="job started")
        latencies.append((started - sent) * 1000)
    median = statistics.median(latencies)
    print(f"\nenqueue -> start on a parked worker: median {median:.2f} ms, max {max(latencies):.2f} ms")
    assert median <= 5.0


@pytest.mark.timing
def test_200_jobs_of_50ms_spread_over_4_parked_workers_finish_within_1s(private):
    raw, procs = private
    q = emq.queue("default")
    before = q.counts().completed
    refs = jobs.nap.enqueue_many([((0.05,), {}) for _ in range(200)])
    wait_for(lambda: q.counts().completed >= before + 200, timeout=20, what="200 jobs completed")
    done = [q.get_job(r.id) for r in refs]
    spread = max(j.finished for j in done) - min(j.created for j in done)
    pids = Counter(j.result for j in done)
    print(f"\n200 x 50 ms on 4 x 4 parked slots: all done {spread.total_seconds() * 1000:.0f} ms after the mint; "
          f"jobs per worker {sorted(pids.values())}")
    assert set(pids) == {p.pid for p in procs}
    assert spread.total_seconds() <= 1.0


def test_a_claim_or_a_mint_leaves_one_wake_token_whether_or_not_one_waited(emq_env):
    """bclaim reads the wake list with its flags and a mint with its priority check (one EXISTS each,
    no LLEN): work left behind or made ready leaves exactly one token; a claim that empties the ring none."""
    q = Queue("default")
    jobs.add.enqueue_many([((1, i), {}) for i in range(5)])
    q.client.delete(q.keys.wake)
    q.bclaim(2, "w")
    assert q.client.llen(q.keys.wake) == 1, "work left behind: the next parked worker is woken"
    q.bclaim(2, "w")
    assert q.client.llen(q.keys.wake) == 1, "a token waited already: none more"
    q.client.delete(q.keys.wake)
    q.bclaim(2, "w")
    assert q.client.llen(q.keys.wake) == 0, "the ring is empty: nothing to wake for"
    jobs.add.enqueue(1, 2)
    jobs.add.enqueue(1, 3)
    assert q.client.llen(q.keys.wake) == 1, "a mint wakes once, and not again while a token waits"
