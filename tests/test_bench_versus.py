"""``make bench-vs`` drains the goal's 200,000 jobs (bench/drains_only.py) by wrapping each tree's own drain
phase, which asks ``ctx.n(20_000, quick)``: these fail when that trick stops holding."""

from __future__ import annotations

import inspect

from bench import drains_only, phases
from bench.harness import Ctx


def _asked(quick: bool) -> int:
    seen = []
    drains_only._sized(lambda ctx: seen.append(ctx.n(20_000, 3_000)))(Ctx(url="", private=True, server="", quick=quick))
    return seen[0]


def test_the_goals_drain_is_200000_jobs_and_quick_stays_quick():
    assert (_asked(False), _asked(True)) == (drains_only.DRAIN_N, 3_000) == (200_000, 3_000)


def test_the_drain_phase_still_asks_for_20000():
    assert "ctx.n(20_000, 3_000)" in inspect.getsource(phases.drain)
