"""The worker loop's round trips go on a connection of its own (``connection.own_client``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..core.connection import disconnect, own_client
from ..core.engine import Queue


class Wire:
    """The worker's queues as its loop sends their finishes and claims: on the loop's own connection,
    made at the first round trip (inside the loop's outage handling) and closed with the worker.
    On a cluster the shared client serves (``own_client`` gives None)."""

    def __init__(self, queues: Sequence[Queue]) -> None:
        self.queues = queues
        self.client: Any = None
        self._wired: list[Queue] = []

    def __getitem__(self, i: int) -> Queue:
        return (self._wired or self._wire())[i]

    def own(self) -> Any:
        """The loop's own client, made now if need be; None on a cluster."""
        if not self._wired:
            self._wire()
        return self.client

    def _wire(self) -> list[Queue]:
        self.client = own_client()
        self._wired = list(self.queues) if self.client is None else [
            q.on(self.client) for q in self.queues]
        return self._wired

    def close(self) -> None:
        """Close the loop's connection: ``Redis.close`` leaves a pool it was given open, and a
        connection left to the garbage collector closes in whatever thread collects it."""
        if self.client is not None:
            disconnect(self.client)
