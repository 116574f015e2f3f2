"""Logical queue names to physical queues: the one place that knows about partitions (rule 10).

A user names a *logical* queue (``clicks``). A busy one may be split, ``EMQ_PARTITIONS =
{"clicks": 6}``, into physical queues ``clicks#0 … clicks#5``, each a whole queue with its own
hash tag, so every script still touches one slot. The tag of partition i is ``clicks#i~s``
(``<prefix>:{clicks#3~41}:…``) with the smallest suffix s whose slot lies in the middle of the
i-th of k equal slot ranges: the partitions spread evenly over an evenly sliced cluster's nodes
(plain ``{clicks#i}`` tags put 1 to 3 of 6 partitions on one of 3 nodes).

A grouped job goes to the partition its group hashes to (CRC32, the same in every process), so
a group's FIFO lane, fairness and cap hold inside that partition; an ungrouped job goes
round-robin, or by its id when the caller chose one (so the create-if-absent of an explicit id
finds the same partition). Generated ids end in ``~<partition>`` so a lookup goes straight to
the right one.

Every entry point (enqueue, recurrences, the tasks backend, ``emq.queue()``, the dashboard, the
commands) resolves names here, and a name is checked here once (``check_name``): one a worker
could not serve (``a:b`` is queue ``a`` of weight ``b`` in ``--queues``) is refused where it is
first used, not accepted and left unworkable. Limit: changing k re-routes groups; jobs already minted stay
where they are, and the tags depend on k, so a queue must be drained before k changes.
"""

from __future__ import annotations

import functools
import itertools
import random
import re
import threading
import zlib
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from redis.crc import REDIS_CLUSTER_HASH_SLOTS, key_slot

from ..errors import ConfigurationError
from . import config, keys
from .records import MintSpec

SEP = "#"  # between a queue's name and its partition number
MARK = "~"  # between a generated job id and its partition number; between a partition and its tag's suffix
MAX_PARTITIONS = 1024  # each of k slot ranges must stay wide enough to aim a tag at its middle
MAX_NAME = 200  # characters of a queue name: it is in every key of the queue
# Letters and digits of any script, "_", "-", ".": a physical partition's "#<n>" too.
NAME = re.compile(rf"[\w.-]{{1,{MAX_NAME}}}(#[0-9]{{1,4}})?")

_turns: dict[str, Any] = {}
_lock = threading.Lock()


@functools.lru_cache(maxsize=4096)
def check_name(queue: str) -> str:
    """The queue name, once it is one every part of emq can use; ConfigurationError saying which characters are."""
    if not isinstance(queue, str) or not NAME.fullmatch(queue):
        raise ConfigurationError(
            f"queue name {queue!r} cannot be used: give 1 to {MAX_NAME} letters (of any script), digits, '_', "
            "'-' or '.' (':' and ',' separate queues and weights in --queues, braces are a key's hash tag, "
            "'#' names a partition)"
        )
    return queue


def count(queue: str) -> int:
    """How many partitions a logical queue has (1: not partitioned)."""
    check_name(queue)
    k = (config.get("EMQ_PARTITIONS") or {}).get(queue, 1)
    if not isinstance(k, int) or k < 1:
        raise ConfigurationError(f"EMQ_PARTITIONS[{queue!r}] must be an integer >= 1, not {k!r}")
    if k > MAX_PARTITIONS:
        raise ConfigurationError(f"EMQ_PARTITIONS[{queue!r}] = {k} is more than {MAX_PARTITIONS} partitions; use fewer")
    if k > 1 and SEP in queue:
        raise ConfigurationError(f"partitioned queue {queue!r} must not contain {SEP!r} (it names a partition)")
    return k


def names(queue: str) -> list[str]:
    """The physical queues of a queue: ``Q#0 … Q#k-1``, or ``[Q]`` (also for a physical name)."""
    k = count(queue)
    return [queue] if k == 1 else [f"{queue}{SEP}{p}" for p in range(k)]


def home(queue: str) -> str:
    """The partition that holds a queue's queue-wide state: ``Q#0`` (or ``Q``)."""
    return names(queue)[0]


def expand(queues: Sequence[str]) -> list[str]:
    """Replace each logical queue by its partitions, keeping order and dropping repeats."""
    return list(dict.fromkeys(name for q in queues for name in names(q)))


def keys_of(prefix: str, name: str) -> keys.QueueKeys:
    """The key names of a physical queue, under the hash tag ``tag`` gives it."""
    if SEP not in name:
        return _plain_keys(prefix, name)
    return keys.QueueKeys(prefix, name, tag(name))


@functools.lru_cache(maxsize=4096)
def _plain_keys(prefix: str, name: str) -> keys.QueueKeys:
    """An unpartitioned queue's keys (its tag is its name, whatever the settings): built once, with their ns."""
    return keys.QueueKeys(prefix, name, name)


def tag(name: str) -> str:
    """The hash tag of a physical queue: its name, or for partition i of k a balanced tag."""
    if SEP not in name:
        return name
    base, _, p = name.rpartition(SEP)
    k = (config.get("EMQ_PARTITIONS") or {}).get(base, 1)
    if not p.isdigit() or not isinstance(k, int) or not 1 < k <= MAX_PARTITIONS or int(p) >= k:
        return name
    return balanced_tag(name, int(p), k)


@functools.lru_cache(maxsize=4096)
def balanced_tag(name: str, i: int, k: int) -> str:
    """``name~s`` with the smallest s whose slot lies in the middle half of the i-th of k equal slot ranges.

    The middle, not anywhere in the range: on a cluster whose node count does not divide k the
    ranges straddle node boundaries, and a tag near a range's middle is the furthest from them.
    CRC16 is the same everywhere, so every process finds the same s (about 2k tries).
    """
    lo, hi = i * REDIS_CLUSTER_HASH_SLOTS // k, (i + 1) * REDIS_CLUSTER_HASH_SLOTS // k
    quarter = (hi - lo) // 4
    lo, hi = lo + quarter, hi - quarter
    s = 0
    while not lo <= key_slot(f"{name}{MARK}{s}".encode()) < hi:
        s += 1
    return f"{name}{MARK}{s}"


def logical(name: str) -> str:
    """The queue a physical name belongs to: ``clicks#3`` -> ``clicks``; anything else unchanged."""
    base, sep, p = name.rpartition(SEP)
    if sep and p.isdigit() and int(p) < (config.get("EMQ_PARTITIONS") or {}).get(base, 1):
        return base
    return name


def of_key(key: str, k: int) -> int:
    """The partition a group (or a caller's job id) always goes to: CRC32, stable across processes."""
    return zlib.crc32(key.encode()) % k


def of_group(queue: str, group: str | None) -> str:
    """The physical queue a group's lane lives in (its cap applies there, exactly).

    The default group (no group) lives in the home partition for queue-wide things such as a
    recurrence; its enqueued jobs still go round-robin (see ``route``).
    """
    k = count(queue)
    if k == 1:
        return queue
    if group in (None, "", keys.DEFAULT_GROUP):
        return home(queue)
    return f"{queue}{SEP}{of_key(group, k)}"


def _next_turn(queue: str, k: int) -> int:
    turn = _turns.get(queue)
    if turn is None:
        with _lock:
            # Each process starts at a random partition so many producers do not all fill #0 first.
            turn = _turns.setdefault(queue, itertools.count(random.randrange(k)))
    return next(turn) % k


def _partition(queue: str, k: int, spec: MintSpec) -> int:
    if spec.group != keys.DEFAULT_GROUP:
        return of_key(spec.group, k)
    if spec.if_absent:
        return of_key(spec.id, k)
    if spec.unique:  # one key, one partition: uniqueness is checked where the key lives ("U<ms>|<s|f>|<key>")
        return of_key(spec.unique.split("|", 2 if spec.unique[0] == "U" else 1)[-1], k)
    return _next_turn(queue, k)


def route(queue: str, specs: Sequence[MintSpec]) -> tuple[list[MintSpec], dict[str, list[MintSpec]]]:
    """Place each job in a partition: (the specs with their final ids, the batch of each physical queue)."""
    k = count(queue)
    if k == 1:
        return list(specs), {queue: list(specs)}
    placed: list[MintSpec] = []
    batches: dict[str, list[MintSpec]] = {}
    for spec in specs:
        p = _partition(queue, k, spec)
        if not spec.if_absent:
            spec = replace(spec, id=f"{spec.id}{MARK}{p}")
        placed.append(spec)
        batches.setdefault(f"{queue}{SEP}{p}", []).append(spec)
    return placed, batches


def marked(queue: str, job_id: str) -> str | None:
    """The partition a generated id names (``…~3`` -> ``Q#3``), or None for an id without a mark."""
    all_names = names(queue)
    head, mark, p = job_id.rpartition(MARK)
    if len(all_names) > 1 and mark and p.isdigit() and int(p) < len(all_names):
        return all_names[int(p)]
    return None


def probe_order(queue: str, job_id: str) -> list[str]:
    """The physical queues that may hold a job, likeliest first.

    A generated id names its partition; a caller's id without a group hashes to one; a grouped
    job with a caller's id may be in its group's partition, so the others follow.
    """
    all_names = names(queue)
    if len(all_names) == 1:
        return all_names
    first = marked(queue, job_id) or all_names[of_key(job_id, len(all_names))]
    return [first] + [n for n in all_names if n != first]
