"""A queue's recurrences on the server (``emq/lua/repeat_*.lua``): one method per script.

The planning (which occurrences, under which missed policy) is ``emq.scheduling.repeat``'s;
these only store definitions and mint a plan by compare-and-set.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .. import stored
from ..records import MintSpec
from .base import Ops

DUE_BATCH = 100  # recurrences handed out per Pump step


class RepeatOps(Ops):
    """Definitions (``repeat``), next times (``repeat:next``) and the compare-and-set mint."""

    def put(self, name: str, definition_json: str) -> bool:
        """Upsert a recurrence; True when it was (re)armed (new, or its schedule changed)."""
        return bool(self._run("repeat_put", [name, definition_json]))

    def drop(self, name: str) -> bool:
        """Remove a recurrence; True when it was there. Jobs it minted stay."""
        return bool(self._run("repeat_drop", [name]))

    def names(self) -> list[str]:
        """The recurrences defined in this queue."""
        return list(self.client.hkeys(self.keys.repeat))

    def due(self, limit: int = DUE_BATCH) -> tuple[int, list[tuple[str, int, str]]]:
        """The server's now and the due recurrences as (name, next ms, definition JSON)."""
        r = self._run("repeat_due", [limit])
        return int(r[0]), [(r[i], int(float(r[i + 1])), r[i + 2]) for i in range(1, len(r), 3)]

    def mint(
        self, name: str, expected: int, key: str, next_ms: int, last: int | None, skipped: int,
        specs: Sequence[MintSpec],
    ) -> tuple[int, list[int] | None]:
        """Mint specs and move the next time if the recurrence is still where the caller saw it.

        Returns (server now, a created flag per spec), or (now, None) when the compare-and-set lost.
        """
        argv: list[Any] = [name, expected, key, next_ms, "" if last is None else last, skipped, len(specs)]
        for spec in specs:
            argv.extend(stored.mint_row(spec))
        chosen = [(spec.id, spec.due) for spec in specs if spec.if_absent]  # occurrences: their ids are derived
        r = self._run_many([("repeat_mint", argv)], also=self._noted(chosen))[0]
        if len(r) == 2 and int(r[1]) == -1:
            return int(r[0]), None
        return int(r[0]), [int(x) for x in r[1:]]
