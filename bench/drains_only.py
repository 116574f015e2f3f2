"""A tree's own ``bench/run.py`` with its drain phase cut to some drains, for ``bench/versus.py``.

Its drains are of DRAIN_N jobs, the size issue 33's goal reads (a tree's ``make bench`` drains 20,000): at
100,000 completed the queue's retention starts deleting a finished job's record at each finish, a cost a
smaller drain never pays (both trees alike), and a worker's start weighs a tenth as much a job.

    python <this tree>/bench/drains_only.py p1 --url ... --only drain   # run with cwd = the tree measured

A release's run.py has no option for it: its ``bench.phases`` (the measured tree's, from the working
folder) is imported once Django is set up, as run.py's main does, and its DRAINS patched before run.py
runs; its table, which reads every drain's figures, prints nothing (bench-vs reads the JSON it writes).
"""

from __future__ import annotations

import functools
import os
import runpy
import sys

DRAIN_N = 200_000


def main() -> None:
    keys = sys.argv.pop(1).split(",")
    sys.path.insert(0, os.getcwd())
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "echd_project.settings")
    import django

    django.setup()
    from bench import phases, table

    phases.DRAINS = tuple(d for d in phases.DRAINS if d[0] in keys)
    phases.PHASES = [_sized(p) if p is phases.drain else p for p in phases.PHASES]
    table.table = lambda ctx: ""
    sys.argv[0] = "bench/run.py"
    runpy.run_path("bench/run.py", run_name="__main__")


def _sized(drain):
    """The drain phase with DRAIN_N jobs a drain (its own asks ctx.n(20_000, quick)), unless --quick."""

    @functools.wraps(drain)
    def sized(ctx) -> None:
        ctx.n = lambda full, quick: quick if ctx.quick else DRAIN_N if full == 20_000 else full
        try:
            drain(ctx)
        finally:
            del ctx.n

    return sized


if __name__ == "__main__":
    main()
