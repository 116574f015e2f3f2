"""Minting: create jobs in a queue, a chunk of up to MAX_BATCH per call of ``mint.lua`` (one job:
the leaner ``mint_one.lua``; a bulk enqueue's plain jobs: ``mint_many.lua``), chunks pipelined,
fenced under EMQ_DURABLE."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from typing import Any

from .. import config, durable
from ..records import MintSpec
from .base import MAX_BATCH, Ops

MINT_PIPELINE = 10  # mint chunks sent in one pipeline: bounds the client's buffer (~2 MB)
STREAM_DEPTH = 2  # mint_many chunks on the wire at once: one running, one waiting in the server's buffer


class MintOps(Ops):
    """Create jobs; ``Queue`` inherits these."""

    def mint(self, specs: Sequence[MintSpec]) -> list[bool]:
        """Create jobs, each chunk of MAX_BATCH atomic; True where a job was new."""
        return [x is True for x in self.mint_stamped(specs)[1]]

    def mint_stamped(self, specs: Sequence[MintSpec]) -> tuple[int, list[bool | str]]:
        """Create jobs as ``mint`` does; also the server's ms of the first chunk (the jobs' ``created``).

        Per job: True (minted), False (its caller-chosen id was taken), or the id of the job that holds
        its unique key (a unique or debounced call that minted nothing, see ``_flowctl.lua``).

        Up to MINT_PIPELINE chunks go in one pipelined round trip, so the server runs one chunk
        while the next is still on the wire (bulk enqueue is bound by the server's time per job).
        Under EMQ_DURABLE each round trip ends with its WAIT / WAITAOF (``durable``).
        """
        return self.mint_rows([spec.argv() for spec in specs])

    def mint_rows(self, rows: Sequence[list[Any]]) -> tuple[int, list[bool | str]]:
        """``mint_stamped`` of jobs given as their ``MintSpec.argv`` rows (an enqueue's plan builds them)."""
        created: list[bool | str] = []
        now_ms = 0
        step = MAX_BATCH * MINT_PIPELINE
        # EMQ_DURABLE: one more command a round trip (off: one settings read, nothing else).
        fence = durable.fence(self.client) if config.get("EMQ_DURABLE") else None
        if fence is None and len(rows) <= MAX_BATCH:  # one script call (every one-by-one enqueue)
            reply = self._run_many([(_mint_script(rows), _mint_argv(rows))])[0]
            return int(reply[0]), _answers(reply)
        for start in range(0, len(rows), step):
            chunks = [rows[i : i + MAX_BATCH] for i in range(start, min(start + step, len(rows)), MAX_BATCH)]
            calls = [(_mint_script(chunk), _mint_argv(chunk)) for chunk in chunks]
            if fence is None:
                replies = self._run_many(calls)
            else:
                replies, fences = self._run_fenced(calls, fence)
                durable.confirm(fences, self.name, min(step, len(rows) - start), start)
            for reply in replies:
                now_ms = now_ms or int(reply[0])
                created.extend(_answers(reply))
        return now_ms, created

    def mint_one(self, argv: list[Any]) -> tuple[int, bool]:
        """Create one job from its ``MintSpec.argv`` (no uniqueness spec) with the lean mint_one.lua,
        in one round trip: the server's ms of the mint (the job's ``created``) and whether it is new."""
        now_ms, made = self._run_one("mint_one", [1, *argv])
        return int(now_ms), made == 1

    def mint_many(self, head: Sequence[Any], columns: Sequence[Sequence[str]],
                  minted: Callable[[int, int, int], None]) -> None:
        """Create plain jobs of one function, ready now, with mint_many.lua.

        head: mint_many.lua's ARGV[2..11], what the jobs share; columns: their own fields, one list
        each (ids, args, kwargs, and groups when head's group is ""). A chunk is MAX_BATCH jobs and is
        atomic. The chunks stream (``scripts.run_stream``): the server runs one while the next waits
        in its buffer and the client packs the one after. ``minted(start, end, now_ms)`` is called as
        the jobs start..end-1 are known to exist (now_ms: the server's time of their mint), while the
        server runs the next chunk; it must not raise.
        """
        stride, n = len(columns), len(columns[0])
        argss = []
        for start in range(0, n, MAX_BATCH):
            end = min(start + MAX_BATCH, n)
            body: list[Any] = [None] * ((end - start) * stride)
            for j, column in enumerate(columns):  # the fields of job i at i * stride: one slice a column
                body[j::stride] = column[start:end]
            argss.append([end - start, *head, *body])

        def each(i: int, reply: Any) -> None:
            minted(i * MAX_BATCH, min((i + 1) * MAX_BATCH, n), int(reply[0]))

        self._run_stream("mint_many", argss, STREAM_DEPTH, each)


def _mint_script(chunk: Sequence[list[Any]]) -> str:
    """mint_one.lua for a chunk of one job without a uniqueness spec (less server time), else mint.lua.

    A row's second field is "0", "1" (a caller's id) or a uniqueness spec, as mint.lua tells them apart.
    """
    return "mint_one" if len(chunk) == 1 and len(chunk[0][1]) == 1 else "mint"


def _mint_argv(chunk: Sequence[list[Any]]) -> list[Any]:
    return [len(chunk), *itertools.chain.from_iterable(chunk)]


def _answers(reply: list[Any]) -> list[bool | str]:
    """A mint's answer per job: minted (True), id taken (False), or the id holding its unique key."""
    return [x if isinstance(x, str) else x == 1 for x in reply[1:]]
