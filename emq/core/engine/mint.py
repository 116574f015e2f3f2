"""Minting: create jobs in a queue, a chunk of up to MAX_BATCH per call of ``mint.lua`` (one job:
the leaner ``mint_one.lua``; a bulk enqueue's plain jobs: ``mint_many.lua``), chunks pipelined,
fenced under EMQ_DURABLE."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .. import config, durable, stored
from ..records import MintSpec
from .base import MAX_BATCH, Ops
from .quotas import Refused

MINT_PIPELINE = 10  # mint chunks sent in one pipeline: bounds the client's buffer (~2 MB)
STREAM_DEPTH = 2  # mint_many chunks on the wire at once: one running, one waiting in the server's buffer


class MintOps(Ops):
    """Create jobs; ``Queue`` inherits these."""

    def mint(self, specs: Sequence[MintSpec]) -> list[bool]:
        """Create jobs, each chunk of MAX_BATCH atomic; True where a job was new."""
        return [x is True for x in self.mint_stamped(specs)[1]]

    def mint_stamped(self, specs: Sequence[MintSpec]) -> tuple[int, list[bool | str | Refused]]:
        """Create jobs as ``mint`` does; also the server's ms of the first chunk (the jobs' ``created``).

        Per job: True (minted), False (its caller-chosen id was taken), the id of the job that holds
        its unique key (a unique or debounced call that minted nothing, see ``_unique.lua``), or
        ``Refused`` (its group or the queue is at its quota: nothing written, ``_quotas.lua``).

        Up to MINT_PIPELINE chunks go in one pipelined round trip, so the server runs one chunk
        while the next is still on the wire (bulk enqueue is bound by the server's time per job).
        Under EMQ_DURABLE each round trip ends with its WAIT / WAITAOF (``durable``).
        """
        return self.mint_rows([stored.mint_row(spec) for spec in specs])

    def mint_rows(self, rows: Sequence[list[Any]]) -> tuple[int, list[bool | str | Refused]]:
        """``mint_stamped`` of jobs given as their mint rows (``stored.mint_row``; an enqueue's plan builds them)."""
        created: list[bool | str | Refused] = []
        now_ms = 0
        step = MAX_BATCH * MINT_PIPELINE
        # EMQ_DURABLE: one more command a round trip (off: one settings read, nothing else).
        fence = durable.fence(self.client) if config.get("EMQ_DURABLE") else None
        if fence is None and len(rows) <= MAX_BATCH:  # one script call (every one-by-one enqueue)
            reply = self._run_many([(_mint_script(rows), stored.mint_argv(rows))],
                                   also=self._noted(stored.chosen(rows)))[0]
            return int(reply[0]), _answers(reply)
        for start in range(0, len(rows), step):
            chunks = [rows[i : i + MAX_BATCH] for i in range(start, min(start + step, len(rows)), MAX_BATCH)]
            calls = [(_mint_script(chunk), stored.mint_argv(chunk)) for chunk in chunks]
            notes = self._noted(stored.chosen(rows[start : start + step]))
            if fence is None:
                replies = self._run_many(calls, also=notes)
            else:
                replies, fences = self._run_fenced(calls, fence, durable.probe)
                durable.confirm(fences, self.name, min(step, len(rows) - start), start)
                if notes:  # after the fenced round trip: WAIT counts only the writes of its own connection
                    self._run_many([], also=notes)
            for reply in replies:
                now_ms = now_ms or int(reply[0])
                created.extend(_answers(reply))
        return now_ms, created

    def mint_one(self, row: list[Any], chosen: bool = False) -> tuple[int, bool | Refused]:
        """Create one job from its mint row (``stored``; no uniqueness spec) with the lean mint_one.lua,
        in one round trip: the server's ms of the mint (the job's ``created``) and whether it is new
        (``Refused``: its group or the queue is at its quota, nothing written).
        chosen: the caller chose its id, noted in the id index in the same round trip (``idindex``)."""
        if chosen:
            now_ms, made = self._run_many([("mint_one", stored.mint_argv([row]))],
                                          also=self._noted(stored.chosen([row])))[0]
        else:
            now_ms, made = self._run_one("mint_one", stored.mint_argv([row]))
        return int(now_ms), Refused.from_reply(made) if isinstance(made, list) else made == 1

    def mint_many(self, head: Sequence[Any], columns: Sequence[Sequence[str]],
                  minted: Callable[[int, int, int, dict[int, Refused]], None]) -> None:
        """Create plain jobs of one function, ready now, with mint_many.lua.

        head: ``stored.mint_many_head``, what the jobs share; columns: their own fields, one list each
        (ids, args, kwargs, and groups when head's group is ""); a chunk leaves out an arguments column
        whose every value is the default (``_sent``). A chunk is MAX_BATCH jobs and is atomic. The chunks
        stream (``scripts.run_stream``): the server runs one while the next waits in its buffer and the
        client packs the one after. ``minted(start, end, now_ms, refused)`` is called as the jobs
        start..end-1 are known to exist (now_ms: the server's time of their mint; refused: index ->
        ``Refused`` of those a quota kept out, nothing written for them), while the server runs the next
        chunk; it must not raise.
        """
        n = len(columns[0])
        argss = []
        for start in range(0, n, MAX_BATCH):
            end = min(start + MAX_BATCH, n)
            sent, names = _sent(columns, start, end)
            stride = len(sent)
            body: list[Any] = [None] * ((end - start) * stride)
            for j, column in enumerate(sent):  # the fields of job i at i * stride: one slice a column
                body[j::stride] = column[start:end]
            argss.append([end - start, *head, names, *body])

        def each(i: int, reply: Any) -> None:
            start, r = i * MAX_BATCH, reply[2:]
            refused = {start + int(r[j]) - 1: Refused.from_reply(r[j + 1 : j + 3]) for j in range(0, len(r), 3)}
            minted(start, min(start + MAX_BATCH, n), int(reply[0]), refused)

        self._run_stream("mint_many", argss, STREAM_DEPTH, each)


def _sent(columns: Sequence[Sequence[str]], start: int, end: int) -> tuple[list[Sequence[str]], str]:
    """The columns a chunk sends and their letters for mint_many.lua's ARGV[12]: ids always, args ("a") and
    kwargs ("k") unless every job of the chunk has none, groups ("g") when there are."""
    sent, names = [columns[0]], ""
    for letter, column, empty in zip("akg", columns[1:], ("[]", "{}", None), strict=False):
        if empty is None or any(v != empty for v in column[start:end]):
            sent.append(column)
            names += letter
    return sent, names


def _mint_script(chunk: Sequence[list[Any]]) -> str:
    """mint_one.lua for a chunk of one job without a uniqueness spec (less server time), else mint.lua."""
    return "mint_one" if len(chunk) == 1 and stored.plain(chunk[0]) else "mint"


def _answers(reply: list[Any]) -> list[bool | str | Refused]:
    """A mint's answer per job: minted (True), id taken (False), the id holding its unique key, or refused
    by a quota."""
    return [x if isinstance(x, str) else Refused.from_reply(x) if isinstance(x, list) else x == 1 for x in reply[1:]]
