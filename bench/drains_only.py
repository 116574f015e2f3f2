"""A tree's own ``bench/run.py`` with its drain phase cut to some drains, for ``bench/versus.py``.

    python <this tree>/bench/drains_only.py p1 --url ... --only drain   # run with cwd = the tree measured

A release's run.py has no option for it: its ``bench.phases`` (the measured tree's, from the working
folder) is imported once Django is set up, as run.py's main does, and its DRAINS patched before run.py
runs; its table, which reads every drain's figures, prints nothing (bench-vs reads the JSON it writes).
"""

from __future__ import annotations

import os
import runpy
import sys


def main() -> None:
    keys = sys.argv.pop(1).split(",")
    sys.path.insert(0, os.getcwd())
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "echd_project.settings")
    import django

    django.setup()
    from bench import phases, table

    phases.DRAINS = tuple(d for d in phases.DRAINS if d[0] in keys)
    table.table = lambda ctx: ""
    sys.argv[0] = "bench/run.py"
    runpy.run_path("bench/run.py", run_name="__main__")


if __name__ == "__main__":
    main()
