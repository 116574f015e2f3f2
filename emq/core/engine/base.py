"""What every family of engine operations shares: one queue's keys, its client, and the calls.

``emq.core.engine`` is the only caller of ``scripts.run`` (a test checks it): each operation is
one method of a class here that knows its script's ARGV order and names the reply's values.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .. import config, fenced, idindex, scripts, topology
from ..connection import get_client, guard

MAX_BATCH = 1000  # items per script call: bounds Lua's stack and the server's time per call


class Ops:
    """One physical queue on the configured server; cheap to build, safe to share between threads."""

    def __init__(self, name: str, *, prefix: str | None = None, client: Any = None) -> None:
        self.name = name
        self.keys = topology.keys_of(prefix or config.get("EMQ_PREFIX"), name)
        self._client = client

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r} prefix={self.keys.prefix!r}>"

    @property
    def client(self) -> Any:
        return self._client or get_client()

    def on(self, client: Any) -> Any:
        """This queue's operations on another client (a worker's own connection)."""
        return type(self)(self.name, prefix=self.keys.prefix, client=client)

    def _run(self, name: str, args: Sequence[Any]) -> Any:
        """Run one script of this queue in one round trip."""
        with guard():
            return scripts.run(self.client, name, [self.keys.ns], args)

    def _run_many(self, calls: Sequence[tuple[str, Sequence[Any]]], raise_on_error: bool = True,
                  meanwhile: Callable[[], None] | None = None, also: Sequence[tuple[Any, ...]] = ()) -> list[Any]:
        """Run several scripts of this queue in one pipelined round trip (error replies as values on request;
        ``meanwhile`` runs while they are on the wire; ``also``: plain commands after them; ``scripts.run_many``)."""
        with guard():
            return scripts.run_many(self.client, [(name, [self.keys.ns], args) for name, args in calls],
                                    raise_on_error, meanwhile, also)

    def _noted(self, chosen: Sequence[tuple[str, str]]) -> list[tuple[Any, ...]]:
        """The commands that note this queue as the holder of jobs of caller-chosen ids (``idindex``)."""
        return idindex.notes(self.keys.prefix, self.name, chosen) if chosen else []

    def _run_stream(self, name: str, argss: Sequence[Sequence[Any]], depth: int,
                    each: Callable[[int, Any], None] | None = None) -> list[Any]:
        """Run one script of this queue once per args, in order, depth calls on the wire at once;
        ``each(i, reply)`` as each reply is read (``scripts.run_stream``)."""
        with guard():
            return scripts.run_stream(self.client, [(name, [self.keys.ns], args) for args in argss], depth, each)

    def _run_one(self, name: str, args: Sequence[Any]) -> Any:
        """Run one script of this queue as ``_run_many`` would, on an enqueue's hot path (``scripts.run_one``)."""
        with guard():
            return scripts.run_one(self.client, name, [self.keys.ns], args)

    def _run_fenced(self, calls: Sequence[tuple[str, Sequence[Any]]], fence: Sequence[Any],
                    ready: Callable[[Any], None] | None = None) -> tuple[list, list]:
        """Run several scripts of this queue pipelined, each round trip closed by fence on its connection
        (``ready(conn)`` first, which may refuse: ``fenced.run``)."""
        with guard():
            return fenced.run(self.client, [(name, [self.keys.ns], args) for name, args in calls], fence, ready)

    def _chunked(self, name: str, ids: Sequence[str]) -> list[str]:
        """Run a script that takes one id per argument over chunks of MAX_BATCH ids."""
        statuses: list[str] = []
        for start in range(0, len(ids), MAX_BATCH):
            statuses.extend(self._run(name, list(ids[start : start + MAX_BATCH])))
        return statuses
