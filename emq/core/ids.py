"""Generated job ids, and the queue each one names (DESIGN rule 13: an id stands alone).

A generated id is ``<queue>.<token>``: the logical queue's name, a dot, and 16 characters of
URL-safe base64 (96 random bits), e.g. ``default.Xr2kq9Lw0bTzA7mE``. A partitioned queue's id ends
in ``~<partition>`` as well (``topology.route``): ``clicks.Xr2kq9Lw0bTzA7mE~3``. So whoever holds an
id knows its queue, and a lookup goes straight to it, without asking every queue. For the
default queue the id is as long as before (24 characters: the 24 hex digits ids had), so a
queued job costs no more memory.

A queue whose name is not made of letters, digits, ``_``, ``-`` and ``.`` (so not safe in a URL
path) gets the older form, 24 hex digits without a queue, as do ids minted before this format:
those are found by asking every known queue (``core.locate``). An id a caller chose
(``job_id=``) is never parsed for sure: what ``queue_of`` reads from it is a guess that the lookup
checks against the job itself, and such ids are found through their index entry (``idindex``).
"""

from __future__ import annotations

import base64
import functools
import os
import re

from .topology import MARK

SEP = "."  # between the queue's name and the token; never in a token
TOKEN_BYTES = 12  # 96 random bits: a repeat is unlikely before 10^14 ids
TOKEN_CHARS = 16  # TOKEN_BYTES in base64, no padding (12 is a multiple of 3)
POOL = 256  # tokens made from one read of the random source
SAFE = re.compile(r"[A-Za-z0-9_.-]+")  # a queue name an id may carry as it is
_TOKEN = re.compile(rf"[A-Za-z0-9_-]{{{TOKEN_CHARS}}}")
_pool: list[str] = []  # tokens not handed out yet; list.pop is atomic, so threads share it


def _forked() -> None:
    _pool.clear()  # a child must not hand out its parent's tokens: two processes would mint one id


os.register_at_fork(after_in_child=_forked)


def new(queue: str) -> str:
    """One generated id of a job of this (logical) queue.

    Its token comes from a pool filled POOL at a time: a read of the random source is a system
    call, dearer than the rest of the id (``docs/reference/performance.md``)."""
    head = _head(queue)
    if head is None:
        return os.urandom(TOKEN_BYTES).hex()
    try:
        return head + _pool.pop()
    except IndexError:
        _pool.extend(_tokens(POOL))  # two threads may both refill: a few tokens more, none twice
        return head + _pool.pop()


def new_many(queue: str, n: int) -> list[str]:
    """n ids as ``new`` makes them, from one read of the random source (one system call, not n)."""
    head = _head(queue)
    if head is None:
        digits = os.urandom(TOKEN_BYTES * n).hex()
        return [digits[i : i + 2 * TOKEN_BYTES] for i in range(0, 2 * TOKEN_BYTES * n, 2 * TOKEN_BYTES)]
    return [head + token for token in _tokens(n)]


def _tokens(n: int) -> list[str]:
    """n tokens from one read of the random source: base64 of the whole turns each 12 bytes into the
    same 16 characters as their own encoding would."""
    text = base64.urlsafe_b64encode(os.urandom(TOKEN_BYTES * n)).decode()
    return [text[i : i + TOKEN_CHARS] for i in range(0, TOKEN_CHARS * n, TOKEN_CHARS)]


@functools.lru_cache(maxsize=1024)
def _head(queue: str) -> str | None:
    """``<queue>.``, what every id of the queue starts with; None for a name an id cannot carry."""
    return queue + SEP if SAFE.fullmatch(queue) else None


def queue_of(job_id: str) -> str | None:
    """The logical queue a generated id names, or None (an older id, or one a caller chose that
    does not look generated). A caller's id may look generated: the lookup checks the job itself."""
    head, mark, p = job_id.rpartition(MARK)
    body = head if mark and p.isdigit() else job_id
    queue, sep, token = body.rpartition(SEP)
    if sep and queue and len(token) == TOKEN_CHARS and _TOKEN.fullmatch(token) and SAFE.fullmatch(queue):
        return queue
    return None
