"""The EXISTS that counts the wake list: bclaim reads its flag keys and whether a wake token waits with
one EXISTS that names the wake list once more than the flags (_wake.lua's WAKE_TOKEN), and lane_push
reads the priority set and the token the same way. Each flag and the token are decoded from one count:
these tests set every flag key with a token waiting, and without one, and check what each decodes to."""

from __future__ import annotations

import re

import emq
from emq.core import keys, scripts
from emq.core.engine import Queue
from emq.core.lanes import PMARK
from emq.testing import check_invariants
from tests import jobs
from tests.procs import server_ms

BCLAIM_FLAGS = ["paused", "caps", "rates", "rhold", "solo"]  # the keys this file's claims set, each one
EXISTS = re.compile(r"redis\.call\('EXISTS', ((?:ns \.\. '\w+'|wake_list)(?:,\s*(?:ns \.\. '\w+'|wake_list))*)\)")


def exists_args(lua: str, decoded_by: str) -> tuple[list[str], int, tuple[int, ...]]:
    """The flag keys and wake-list count of the EXISTS just above the line that decodes it, and the
    decode's numbers."""
    at = lua.index(decoded_by)
    args = [a.strip() for a in EXISTS.findall(lua[:at])[-1].split(",")]
    flags = [a.split("'")[1] for a in args if a != "wake_list"]
    line = lua[at:].split("\n", 1)[0]
    return flags, args.count("wake_list"), tuple(int(n) for n in re.findall(r"\d+", line))


def claimed(q: Queue, n: int) -> list[tuple[str, int]]:
    return [(c.group, c.args[-1]) for c in q.bclaim(n, "w")]


def flags_set(q: Queue) -> int:
    return q.client.exists(*(q.keys.fixed(k) for k in BCLAIM_FLAGS))


def test_bclaims_exists_names_the_wake_list_once_more_than_its_flags_and_decodes_by_that():
    """A flag key added to the EXISTS without one more wake list (or the decode's numbers) would read a
    flag as the token or the token as flags: the count of k flags and k + 1 wake lists splits at k."""
    lua = (scripts.LUA_DIR / "bclaim.lua").read_text()
    flags, wakes, (above, modulus) = exists_args(lua, "WAKE_TOKEN, flags = flags >")
    assert flags == BCLAIM_FLAGS, f"bclaim's flags are now {flags}: set each one in the claims below"
    assert (wakes, above, modulus) == (len(flags) + 1, len(flags), len(flags) + 1)


def test_lane_pushs_exists_names_the_wake_list_twice_after_the_priority_set():
    lua = (scripts.LUA_DIR / "_lanes.lua").read_text()
    flags, wakes, numbers = exists_args(lua, "PRIO[''], WAKE_TOKEN = n %")
    assert (flags, wakes, numbers) == (["prio"], 2, (2, 1, 1))  # n % 2 == 1, n > 1


def test_a_claim_with_every_flag_set_and_a_token_waiting_decodes_each(emq_env):
    """Each flag key set (a cap, a rate limit, a hold, solos, then a pause) with a wake token waiting,
    and without one: each step's claims, ring and tokens show every flag and the token read right."""
    q = Queue("default")
    emq.set_group_limit("default", "capped", 1)
    emq.set_rate_limit("default", 1, 60, group="rated")
    for group in ("capped", "rated", "held", "plain"):
        jobs.add.using(group=group).enqueue_many([((group, i), {}) for i in range(3)])
    jobs.for_tenant.enqueue_many([((t, 0), {}) for t in (1, 2)])  # lone groups of one mint: solos
    q.client.zadd(q.keys.rhold, {"held": server_ms(q.client) + 60_000})  # a hold on a group on the ring
    assert q.client.lrange(q.keys.ring, 0, -1) == ["capped", "rated", "held", "plain", "tenant-1", "tenant-2"]
    assert flags_set(q) == len(BCLAIM_FLAGS) - 1 and q.client.llen(q.keys.wake) == 1  # all but paused

    # The cap takes one, the limit one, the hold none, the solo its job; plain stays, work is left behind.
    assert claimed(q, 4) == [("capped", 0), ("rated", 0), ("plain", 0), ("tenant-1", 0)]
    assert q.client.lrange(q.keys.ring, 0, -1) == ["tenant-2", "plain"]
    assert q.client.llen(q.keys.wake) == 1, "a token waited: the baton adds none"
    assert q.client.smembers(q.keys.rout) == {"rated", "held"}

    q.pause()  # every flag key set, a token waiting: the paused queue answers nothing, changes nothing
    assert flags_set(q) == len(BCLAIM_FLAGS) and q.client.llen(q.keys.wake) == 1
    assert q.bclaim(4, "w") == []
    assert q.client.lrange(q.keys.ring, 0, -1) == ["tenant-2", "plain"] and q.client.llen(q.keys.wake) == 1

    q.resume()
    q.client.delete(q.keys.wake)  # no token waits: work left behind wakes the next parked worker
    assert flags_set(q) == len(BCLAIM_FLAGS) - 1
    assert claimed(q, 2) == [("tenant-2", 0), ("plain", 1)]
    assert q.client.lrange(q.keys.ring, 0, -1) == ["plain"]
    assert q.client.llen(q.keys.wake) == 1, "no token waited: the baton adds one"

    assert claimed(q, 5) == [("plain", 2)]  # a token waits and the ring empties: nothing to wake for
    assert q.client.llen(q.keys.ring) == 0 and q.client.llen(q.keys.wake) == 1
    check_invariants(q)


def test_a_mint_into_a_group_in_priority_mode_decodes_the_priority_set_and_the_token(emq_env):
    """A priority-0 job minted reads the priority set and the token with one EXISTS (lane_push): into a
    group in priority mode it goes through the group's zset, and a mint wakes only when no token waits."""
    q = Queue("default")
    first = jobs.add.using(group="q").enqueue("q0", 0)  # no priority set, no token (n = 0): the mint wakes
    second = jobs.add.using(group="q").enqueue("q1", 0)  # no priority set, a token (n = 2): none more
    assert q.client.llen(q.keys.wake) == 1 and q.client.lrange(q.keys.lane("q"), 0, -1) == [first.id, second.id]
    jobs.add.using(group="p", priority=-1).enqueue("low", 0)  # p enters priority mode
    assert q.client.exists(q.keys.prio) and q.client.llen(q.keys.wake) == 1
    jobs.add.using(group="p").enqueue("mid", 0)  # the priority set and a token: both read from n = 3
    assert q.client.llen(q.keys.wake) == 1, "a token waited: the mint adds none"
    q.client.delete(q.keys.wake)
    jobs.add.using(group="p").enqueue("late", 0)  # the priority set, no token: n = 1
    assert q.client.llen(q.keys.wake) == 1, "no token waited: the mint adds one"
    assert q.client.lrange(q.keys.lane("p"), 0, -1) == [PMARK] * 3
    assert q.client.zcard(q.keys.ns + keys.PLANE + "p") == 3
    claims = q.bclaim(5, "w")
    assert [c.args[0] for c in claims if c.group == "p"] == ["mid", "late", "low"]
    assert [c.args[0] for c in claims if c.group == "q"] == ["q0", "q1"]
    check_invariants(q)
