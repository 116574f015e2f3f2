"""Every key name emq uses, in one place.

All keys of one queue carry the queue's hash tag, ``<prefix>:{<queue>}:…``, so every
script touches one cluster slot (DESIGN rule 6); a partition's tag is chosen by
``topology.tag`` (``<prefix>:{clicks#3~41}:…``) to spread a queue's partitions over the slots.
Scripts receive the queue's namespace ``<prefix>:{<tag>}:`` as KEYS[1] and derive per-job and
per-group keys from it with the suffixes below (``tests/test_cluster_slots.py`` checks that the Lua
files use no other).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

JOB = "job:"  # + id        hash   one job
LANE = "lane:"  # + group   list   ready ids of one group
MINUTE = "minute:"  # + n   hash   per-minute outcome counters for the dashboard chart
DEPS = "deps:"  # + id      set    parent ids a waiting job (or a batch) still waits for
CHILDREN = "children:"  # + id  set  JSON [queue, id] of the jobs waiting for this one ("" queue: this one)
FLOW = "flow:"  # + id      hash   a batch or a chain: kind, total, counts, callbacks (the dashboard's Flows)
MEMBERS = "members:"  # + id  list  JSON [queue, id] of a flow's members or steps, in order
FINISHED = "finished:"  # + id  list  a token the finish of a waited-on job pushes (ref.wait's blocking pop)
RESULTS = "results:"  # + id  hash  a chord's member id -> its result JSON, kept as each member ends (_chord.lua)
# Flow control (#14): _unique.lua, _rates.lua, _holds.lua and _prio.lua
UNIQUE = "unique:"  # + key  string  the id of the job that holds a unique / debounce key (PX: its window)
RLOG = "rlog:"  # + group    zset   start ms of a rate-limited group's starts in its window ("": the queue's)
PLANE = "plane:"  # + group  zset   ready ids of a group in priority mode, by (100 - priority) * 1e13 + seq
# Statistics per job name (_jobstats.lua, stats_roll.lua; the layout: emq/core/histogram.py); name "" = the queue's
STAT_MINUTE = "jstat:m"  # + <minute>:<name>   string  a minute's counts and durations, 75 min (BITFIELD slots)
STAT_TEN = "jstat:t"  # + <window>:<name>      string  ten minutes' (window = minute // 10), 7 days (the Pump's roll)
PREFIXES = (JOB, LANE, MINUTE, DEPS, CHILDREN, FLOW, MEMBERS, FINISHED, RESULTS, UNIQUE, RLOG, PLANE, STAT_MINUTE,
            STAT_TEN)
DEFAULT_GROUP = "_"
GUARD = "guard"  # never written; a second declared key that makes a migrating slot refuse scripts


@dataclass(frozen=True)
class QueueKeys:
    """The key names of one queue; ``tag`` is its hash tag when not its name (``topology.keys_of``)."""

    prefix: str
    queue: str
    tag: str = ""

    @functools.cached_property
    def ns(self) -> str:  # built once: every script call and key name starts with it
        return f"{self.prefix}:{{{self.tag or self.queue}}}:"

    def job(self, job_id: str) -> str:
        return self.ns + JOB + job_id

    def jobs_pattern(self) -> str:
        """A SCAN pattern of every job key of the queue (the hash tag's braces literal; [ ] * ? \\ escaped)."""
        return "".join("\\" + c if c in "[]*?\\" else c for c in self.ns + JOB) + "*"

    def lane(self, group: str) -> str:
        return self.ns + LANE + group

    def minute(self, minute: int) -> str:
        return self.ns + MINUTE + str(minute)

    def stat(self, resolution: str, window: int, name: str) -> str:
        """A window of the statistics of one job name ("" the queue's): resolution "m" a minute, "t" ten."""
        return f"{self.ns}{STAT_MINUTE if resolution == 'm' else STAT_TEN}{window}:{name}"

    def deps(self, job_id: str) -> str:
        return self.ns + DEPS + job_id

    def children(self, job_id: str) -> str:
        return self.ns + CHILDREN + job_id

    def flow(self, flow_id: str) -> str:
        return self.ns + FLOW + flow_id

    def members(self, flow_id: str) -> str:
        return self.ns + MEMBERS + flow_id

    def finished(self, job_id: str) -> str:
        return self.ns + FINISHED + job_id

    def fixed(self, suffix: str) -> str:
        """Name one of the queue's fixed keys (see FIXED), e.g. ``fixed("leases")``."""
        if suffix not in FIXED:
            raise KeyError(f"no fixed key {suffix!r} in a queue")
        return self.ns + suffix

    def __getattr__(self, name: str) -> str:
        """Allow ``keys.leases`` and ``keys.repeat_next`` for ``repeat:next``."""
        suffix = name.replace("_", ":")
        if suffix in FIXED:
            return self.ns + suffix
        raise AttributeError(name)


# The fixed keys of a queue, by suffix.
FIXED = frozenset(
    {
        "scheduled",  # zset  id -> due ms (the visibility fence)
        "ring",  # list  groups with ready work that are under their cap (and lanes a cancel emptied, until
        # a claim comes round to them)
        "ring:in",  # set  the groups in the ring list, each once: joining needs no scan (_ring.lua)
        "counters",  # hash  ready (ids in all lanes) and mode ("exact", "recount"; absent: walk the lanes)
        "recount:seen",  # set  groups recount.lua has counted; deleted when the recount ends
        "lanes",  # set   groups whose lane holds ready work (on the ring or capped off it)
        "solo",  # hash  group -> its one ready id, in place of a list lane:<group> (_solo.lua)
        "leases",  # zset  id -> lease expiry ms
        "wake",  # list  tokens parked workers block on
        "cancels",  # sharded channel (not a key): the running jobs cancel.lua cancelled (runtime/cancels.py)
        "pumpwake",  # list  tokens a parked Pump blocks on (earlier due time, new lease)
        "pumplast",  # string  "<pump>|<ms>|<planned ms>": the leading Pump's last tick, which a late one
        # compares with to see a server stall (tick.lua), and its next, which a claim's earlier lease or a
        # hold's earlier end wakes it for (_wake.lua's pump_next)
        "done",  # zset  id -> finished ms, trimmed by age and count
        "dead",  # zset  id -> finished ms, kept until deleted or past EMQ_DEAD_TTL / EMQ_KEEP_DEAD
        "dead:classes",  # hash  error class -> "<count>,<first ms>,<last ms>" of the dead jobs (_classes.lua)
        "cancelled",  # zset  id -> cancelled ms, trimmed like done
        "paused",  # string  present while the queue is paused: claims take nothing
        "paused:groups",  # set  groups whose lanes are paused: off the ring like a capped group
        "reclaims",  # zset  id -> last reclaim ms (the admin's stalled view)
        "active",  # hash  group -> active jobs
        "held",  # hash  id -> group of each leased job of a capped group: its count, known without the job
        "caps",  # hash  group -> concurrency cap
        "stats",  # hash  counters: minted, claimed, completed, retried, dead, reclaimed, stale
        "leader",  # string  id of the Pump that leads this queue; PX renewed every tick
        "repeat",  # hash  name -> recurrence definition (JSON)
        "repeat:next",  # zset  name -> next occurrence ms (0: armed, the Pump computes the first)
        "repeat:last",  # hash  name -> last minted occurrence ms
        "waiting",  # zset  id -> minted ms: jobs waiting for their parents (after=, chains, batch callbacks)
        "waiting:at",  # string  "<rank>|<ms>": where the Pump's look for vanished parents goes on, and when
        "relay",  # list  "<seq>|<JSON>": parents' outcomes for jobs in other queues, forwarded by the Pump
        "relay:seq",  # string  the last relay entry's sequence number (entries are acknowledged up to one)
        "flows",  # zset  flow id -> created ms: the batches and chains recorded in this queue
        "events",  # stream  state changes, one entry per script call (EMQ_EVENTS), capped near EMQ_EVENTS_MAX
        "rates",  # hash  group | "*" | "" (the queue) -> "<limit>,<per ms>": rate limits (and set_rate.lua's WIDE)
        "rhold",  # zset  group | "" -> ms its rate hold ends (a full window, or a job's RateLimited)
        "rout",  # set   held groups taken off the ring; the Pump's tick puts them back
        "prio",  # set   groups in priority mode (their ready jobs in plane:<group>)
        "pseq",  # string  the last priority sequence number (FIFO among equal priorities)
        # hash  job name -> "<jobs>,<first ms>": jobs held because a worker that claimed them did not know their
        # name (a rolling deploy), and since when (finish.lua); read by emq status and the dashboard (core/unknown.py)
        "unknown",
        "quotas",  # hash  group | "*" | "" (the queue) -> most jobs not yet finished (_quotas.lua)
        "queued",  # hash  group | "" -> jobs a quota counts that have not finished yet
        "jstat:names",  # zset  job name ("" the queue's total) -> the last minute its statistics were written
    }
)


def guard(ns: str) -> str:
    """KEYS[2] of every script: in the queue's slot, never written (see ``scripts``)."""
    return ns + GUARD


def registry_queues(prefix: str) -> str:
    """Set of queue names ever used, for the admin; never touched by a queue's scripts."""
    return f"{prefix}:queues"


def job_index(prefix: str, job_id: str) -> str:
    """Set of the physical queues holding a job of a caller-chosen id (``idindex``); never touched by a
    queue's scripts. No hash tag of its own: each id's entry falls in a slot of its own on a cluster."""
    return f"{prefix}:id:{job_id}"


def registry_workers(prefix: str) -> str:
    return f"{prefix}:workers"


def worker(prefix: str, worker_id: str) -> str:
    return f"{prefix}:worker:{worker_id}"


def worker_wake(prefix: str, worker_id: str) -> str:
    """List a worker's heartbeat blocks on between beats: a token says its stored settings changed."""
    return f"{prefix}:worker:{worker_id}:wake"


def worker_settings(prefix: str) -> str:
    """Hash of the settings operators stored for workers: selector -> JSON (``emq.core.overrides``)."""
    return f"{prefix}:workers:settings"
