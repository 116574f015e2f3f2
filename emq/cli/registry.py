"""The subcommands of ``manage.py emq``: each is a function registered with its arguments.

Adding one is a few lines next to its kin:

    @subcommand("cancel", "Cancel jobs by id.", Arg("ids", nargs="+", metavar="ID"), QUEUE)
    def cancel(opts: Options, io: IO) -> Result:
        return by_id(per_id(opts["queue"], opts["ids"], lambda q, ids: q.cancel(ids)), "cancelled")

A function gets the parsed options and the command's streams and returns a ``Result``: what to
print (a table or lines) and, for ``--json``, the data; ``ok`` decides the exit code (0 or 1).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import IO as Stream
from typing import Any

Options = dict[str, Any]


@dataclass(frozen=True)
class Arg:
    """One argparse argument: its flags and keywords, as ``parser.add_argument`` takes them."""

    flags: tuple[str, ...]
    options: dict[str, Any]

    def __init__(self, *flags: str, **options: Any) -> None:
        object.__setattr__(self, "flags", flags)
        object.__setattr__(self, "options", options)


@dataclass
class IO:
    """The command's streams: output, messages and progress, answers to questions."""

    out: Stream[str]
    err: Stream[str]
    stdin: Stream[str]


@dataclass
class Result:
    """What a subcommand found or did: rows for a table (or lines), the data for --json, and the outcome."""

    data: Any
    rows: list[dict[str, Any]] | None = None
    lines: list[str] = field(default_factory=list)
    ok: bool = True
    failure: str = ""  # said on stderr when not ok
    shown: bool = False  # already printed by the subcommand (--watch)


@dataclass(frozen=True)
class Subcommand:
    name: str
    help: str
    args: tuple[Arg, ...]
    run: Callable[[Options, IO], Result]


COMMANDS: dict[str, Subcommand] = {}


def subcommand(name: str, help: str, *args: Arg) -> Callable[[Callable[[Options, IO], Result]], Any]:
    """Register a function as ``manage.py emq <name>`` with these arguments (``--json`` is added)."""

    def register(fn: Callable[[Options, IO], Result]) -> Callable[[Options, IO], Result]:
        COMMANDS[name] = Subcommand(name, help, args, fn)
        return fn

    return register


QUEUE = Arg("--queue", default=None, help="the queue holding the jobs (default: wherever each id is)")
YES = Arg("--yes", action="store_true", help="do not ask before acting on many jobs")
