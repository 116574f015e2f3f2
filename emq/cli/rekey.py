"""``manage.py emq rekey``: seal every stored encrypted job again with the newest key of EMQ_ENCRYPTION_KEYS.

Key rotation: put a new key first in EMQ_ENCRYPTION_KEYS (the old ones after it) everywhere, run this,
then remove the old keys. It walks each queue in chunks (``CryptoOps.rekey``), saying how far it got,
and may run while workers do: a field a worker wrote meanwhile is left as it wrote it. Running it again
rewrites nothing the first run did. It exits 1 while some job no key opens (a key removed too early).
"""

from __future__ import annotations

from collections.abc import Callable

from ..core import registry, sealed
from ..core.engine.rekey import Rekeyed
from ..core.logical import partitions
from .registry import IO, Arg, Options, Result, subcommand

COLUMNS = ("queue", "seen", "encrypted", "rewritten", "current", "undecryptable", "moved")


@subcommand(
    "rekey", "Seal every stored encrypted job again with the newest key of EMQ_ENCRYPTION_KEYS, in chunks.",
    Arg("--queue", default=None, help="only this queue (default: every known queue)"),
    Arg("--dry-run", action="store_true", help="count what would be rewritten, write nothing"),
)
def rekey(opts: Options, io: IO) -> Result:
    sealed.require_keys()
    names = [opts["queue"]] if opts["queue"] else sorted(registry.known_queues())
    rows = [_row(q.name, q.crypto.rekey(opts["dry_run"], _progress(q.name, io))) for q in partitions(names)]
    bad = sum(r["undecryptable"] for r in rows)
    verb = "would rewrite" if opts["dry_run"] else "rewrote"
    io.err.write(f"{verb} {sum(r['rewritten'] for r in rows):,} job(s) in {len(rows)} queue(s)\n")
    failure = (f"{bad:,} encrypted job(s) no key of EMQ_ENCRYPTION_KEYS opens (e.g. {_examples(rows)}): "
               "keep every key they may have been sealed with until rekey reports none") if bad else ""
    table = [{c: r[c] for c in COLUMNS} for r in rows]
    return Result({"dry_run": opts["dry_run"], "queues": rows}, rows=table, ok=not bad, failure=failure)


def _row(queue: str, done: Rekeyed) -> dict:
    return {"queue": queue, **{c: getattr(done, c) for c in COLUMNS[1:]}, "undecryptable_ids": done.undecryptable_ids}


def _progress(queue: str, io: IO) -> Callable[[Rekeyed], None]:
    def said(done: Rekeyed) -> None:
        io.err.write(f"{queue}: {done.seen:,} job(s) read, {done.encrypted:,} encrypted, {done.rewritten:,} "
                     f"to the newest key, {done.undecryptable:,} no key opens\n")
        io.err.flush()

    return said


def _examples(rows: list[dict]) -> str:
    return ", ".join(f"{r['queue']}/{i}" for r in rows for i in r["undecryptable_ids"][:3])
