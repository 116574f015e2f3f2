"""Settings an operator stores for running workers: concurrency, queues (with weights) and a pause, kept on
the server until cleared, so a restarted worker takes them again (``manage.py emq workers``, the dashboard).

One hash beside the registries (``<prefix>:workers:settings``): a selector -> its settings as JSON. A selector
is "*" (every worker) or a worker id, or a part of one that ends at a colon: "host", "host:pid",
"host:pid:abc123" (a restart gives a worker a new pid, so a setting meant to outlive it names its host, or
all). A worker takes each setting from the most specific selector that has it. A change pushes a token onto
the wake list of each live worker it concerns, which the worker's heartbeat blocks on between its beats:
it takes the change at once, and reads the hash on its own only every few beats (the idle budget).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import ConfigurationError
from . import keys, topology
from .connection import get_client, guard
from .registry import workers

ALL = "*"
MAX_CONCURRENCY = 1000  # threads a worker may be told to run: more is a typo, not a setting
WAKE_TTL = 60  # seconds a wake token waits for a worker that no longer pops it


@dataclass(frozen=True)
class Override:
    """What the stored settings say for one worker (None: nothing stored, its own start-up value holds)."""

    concurrency: int | None = None
    queues: tuple[str, ...] | None = None  # "name" or "name:weight" specs, as --queues takes them
    paused: bool | None = None
    sources: tuple[str, ...] = ()  # the selectors it came from, most specific first


def matches(selector: str, worker_id: str) -> bool:
    """Whether a selector names this worker: all, its id, or a part of its id that ends at a colon."""
    return selector == ALL or worker_id == selector or worker_id.startswith(selector + ":")


def effective(worker_id: str, stored: dict[str, dict[str, Any]]) -> Override:
    """The settings that apply to one worker: each from the most specific selector that sets it."""
    mine = sorted((s for s in stored if matches(s, worker_id)), key=lambda s: (s != ALL, s.count(":"), len(s)),
                  reverse=True)
    found: dict[str, Any] = {}
    for selector in mine:
        for field in ("concurrency", "queues", "paused"):
            if field not in found and stored[selector].get(field) is not None:
                found[field] = stored[selector][field]
    queues = tuple(found["queues"]) if "queues" in found else None
    return Override(found.get("concurrency"), queues, found.get("paused"), tuple(mine))


def parse(stored: dict[str, str]) -> dict[str, dict[str, Any]]:
    """The hash as read (selector -> JSON) as dicts; a value that is not a JSON object is left out."""
    out = {}
    for selector, raw in stored.items():
        try:
            value = json.loads(raw)
        except ValueError:
            continue
        if isinstance(value, dict):
            out[selector] = value
    return out


def stored(prefix: str) -> dict[str, dict[str, Any]]:
    """Every stored setting, by selector."""
    with guard():
        return parse(get_client().hgetall(keys.worker_settings(prefix)))


def check_concurrency(n: Any) -> int:
    try:
        value = int(n)
    except (TypeError, ValueError):
        value = 0
    if not 1 <= value <= MAX_CONCURRENCY:
        raise ConfigurationError(f"concurrency must be a whole number from 1 to {MAX_CONCURRENCY}, not {n!r}")
    return value


def check_queues(text: str | Sequence[str]) -> tuple[str, ...]:
    """"high:5,low" (or a list of specs) as specs, each queue name one a worker can serve, each weight >= 1."""
    specs = [s.strip() for s in (text.split(",") if isinstance(text, str) else text) if s.strip()]
    if not specs:
        raise ConfigurationError("give at least one queue, e.g. --queues high:5,low:1")
    for spec in specs:
        name, _, weight = spec.partition(":")
        topology.names(name.strip())  # a name no worker could serve is refused, saying why
        if weight and not (weight.isdigit() and int(weight) >= 1):
            raise ConfigurationError(f"queue weight in {spec!r} must be a whole number >= 1, e.g. {name}:5")
    return tuple(specs)


def store(prefix: str, selector: str, changes: dict[str, Any]) -> dict[str, Any]:
    """Merge changes (concurrency, queues, paused; None removes one) into a selector's settings; its new ones."""
    key = keys.worker_settings(prefix)
    with guard():
        client = get_client()
        current = parse({selector: client.hget(key, selector) or "{}"}).get(selector, {})
        current.update(changes)
        current = {k: v for k, v in current.items() if v is not None}
        if current:
            client.hset(key, selector, json.dumps(current, sort_keys=True))
        else:
            client.hdel(key, selector)
    return current


def clear(prefix: str, selector: str | None = None) -> int:
    """Forget one selector's settings (None: every stored setting); how many selectors went."""
    key = keys.worker_settings(prefix)
    with guard():
        client = get_client()
        if selector is None:
            n = client.hlen(key)
            client.delete(key)
            return int(n)
        return int(client.hdel(key, selector))


def wake(prefix: str, worker_ids: Iterable[str]) -> None:
    """Tell these workers' heartbeats to read the settings now (one token each, kept WAKE_TTL at most)."""
    ids = list(worker_ids)
    if not ids:
        return
    with guard():
        pipe = get_client().pipeline(transaction=False)
        for wid in ids:
            pipe.lpush(keys.worker_wake(prefix, wid), "1")
            pipe.expire(keys.worker_wake(prefix, wid), WAKE_TTL)
        pipe.execute()


def selector_of(worker: str | None, every: bool) -> str:
    """The selector a command names: --all is "*", --worker an id or a part of one; exactly one of them."""
    if every == bool(worker and worker.strip()):
        raise ConfigurationError("name the workers: --worker ID (an id, or its host, or host:pid) or --all")
    return ALL if every else str(worker).strip()


def change(prefix: str, selector: str, changes: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """Store changes for a selector and wake the live workers it names; its settings now, and those workers."""
    now = store(prefix, selector, changes)
    return now, _wake_matching(prefix, lambda wid: matches(selector, wid))


def forget(prefix: str, selector: str | None) -> tuple[int, list[str]]:
    """Clear a selector's settings (None: all) and wake the live workers that may run otherwise now."""
    gone = clear(prefix, selector)
    return gone, _wake_matching(prefix, lambda wid: selector is None or matches(selector, wid))


def _wake_matching(prefix: str, match: Any) -> list[str]:
    ids = [w.id for w in workers(prefix) if match(w.id)]
    wake(prefix, ids)
    return ids
