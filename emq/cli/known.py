"""What a command is asked about must exist: a queue someone used, a state a job can be in, a time that
parses. Each refusal is one line naming what is known (a typo lists nothing, silently, otherwise)."""

from __future__ import annotations

from ..core import config, registry, topology
from ..core.engine.bulk import LISTS
from ..core.engine.filters import parse_time
from ..errors import ConfigurationError
from .render import duration

STATES = [s for s in LISTS if s != "stalled"]


def unknown_queue(name: str) -> str | None:
    """Why a queue name is refused (None: it is known: in the registry, the default queue, or partitioned
    in EMQ_PARTITIONS)."""
    known = registry.known_queues() | {config.get("EMQ_DEFAULT_QUEUE")} | set(config.get("EMQ_PARTITIONS") or {})
    if topology.logical(name) in known:
        return None
    listed = ", ".join(sorted(known)) or "none yet"
    return (f"no queue {name!r} in this project (known: {listed}); a queue is known once a job was enqueued "
            "to it or a worker served it")


def bad_state(state: str) -> str | None:
    """Why a state is refused (None: a list of jobs has it)."""
    return None if state in STATES else f"no state {state!r}: use one of {', '.join(STATES)}"


def when(text: str | None, now_ms: int, option: str) -> int | None:
    """Epoch ms of an --since / --until value: ISO 8601 (UTC without an offset), or an age such as 2h
    (that long before now). ConfigurationError saying what it takes."""
    if not text:
        return None
    try:
        return now_ms - int(duration(text) * 1000)
    except ConfigurationError:
        pass
    try:
        return parse_time(text, option)
    except ValueError as exc:
        raise ConfigurationError(f"{exc}, or an age such as 90m or 2d") from None
