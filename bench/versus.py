"""``make bench-vs``: this tree's speed-goal figures side by side with an earlier release's, in one session.

    python bench/versus.py [--rev v0.2.0] [--runs 3] [--quick] [--all-drains]

The release is checked out in a temporary git worktree (a tag a fresh clone lacks falls back to its commit,
FALLBACK); one private embedded Valkey serves both; each tree's own ``bench/run.py`` runs the enqueue, drain
and memory phases against it, alternating (this, the release, this, ...), so that drift on a shared machine
hits both alike. Printed: each goal's figure for both (median of the runs, and the runs), their ratio, and the
goal (issue 33's: server CPU a drained job <= 0.55x, bytes a queued job <= 0.6x, the bulk mint >= 0.8x of the
pipelined no-op call's limit).

Each tree's drain phase runs only the drains a goal reads (GOAL_DRAINS: one emq_worker x 50; bench/drains_only.py),
of 200,000 jobs as the goal says, its other four (more processes, concurrency 10, no line a job) left out: three
alternating runs of both trees take about 8 minutes, not over an hour. ``--all-drains`` runs them all, of 20,000.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FALLBACK = {"v0.2.0": "b84f0f6"}  # a release's commit, for a clone made without tags
PHASES = "enqueue,drain,memory"
GOAL_DRAINS = ("p1",)  # bench/phases.py's DRAINS keys the goals read

# (label, phase, key, how to compare, goal): "ratio" compares this tree's figure with the release's; "own"
# is a ratio the figure already is (the release's is shown beside it).
GOALS = (
    ("server CPU µs a drained job (1 emq_worker x 50, 200,000)", "drain", "p1_server_cpu_usec_per_job",
     "ratio", ("<=", 0.55)),
    ("bytes a queued job (bulk mint)", "memory", "bytes_per_queued_job", "ratio", ("<=", 0.6)),
    ("bulk mint / pipelined no-op call limit", "enqueue", "bulk_vs_pipelined", "own", (">=", 0.8)),
    ("drain /s (1 emq_worker x 50, 200,000)", "drain", "p1_per_s", "ratio", None),
    ("server CPU µs a bulk-minted job", "enqueue", "bulk_server_cpu_usec_per_job", "ratio", None),
)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rev", default="v0.2.0", help="the release to compare with (a tag or a commit)")
    ap.add_argument("--runs", type=int, default=3, help="alternating runs of each tree (median of them)")
    ap.add_argument("--quick", action="store_true", help="small counts: a smoke run")
    ap.add_argument("--all-drains", action="store_true",
                    help="every drain of bench/run.py's drain phase, not only the goals' (about 4x the time)")
    opts = ap.parse_args()
    sha = _commit(opts.rev)
    work = Path(tempfile.mkdtemp(prefix="emq-bench-vs-"))
    other = work / "tree"
    subprocess.run(["git", "worktree", "add", "--detach", "-q", str(other), sha], cwd=ROOT, check=True)
    sys.path.insert(0, str(ROOT))
    from emq.core import embedded

    url = embedded.start(work / "valkey", persist=False)
    try:
        results: dict[str, list[dict]] = {"this": [], opts.rev: []}
        for i in range(opts.runs):
            for name, tree in (("this", ROOT), (opts.rev, other)):
                sys.stderr.write(f"bench-vs: run {i + 1}/{opts.runs} of {name} ({tree})\n")
                results[name].append(_run(tree, url, work / f"{name}-{i}.json", opts.quick, opts.all_drains))
        print(_table(results, opts.rev, url))
    finally:
        embedded.stop(work / "valkey")
        subprocess.run(["git", "worktree", "remove", "--force", str(other)], cwd=ROOT, check=False)
        shutil.rmtree(work, ignore_errors=True)
    return 0


def _commit(rev: str) -> str:
    for candidate in (rev, FALLBACK.get(rev)):
        if candidate:
            found = subprocess.run(["git", "rev-parse", "--verify", "-q", f"{candidate}^{{commit}}"], cwd=ROOT,
                                   capture_output=True, text=True)
            if found.returncode == 0:
                return found.stdout.strip()
    sys.exit(f"bench-vs: no commit {rev!r} here (fetch the tags: git fetch --tags), and no fallback for it")


def _run(tree: Path, url: str, out: Path, quick: bool, all_drains: bool) -> dict:
    """One tree's own bench on the shared server: its figures as its run.py wrote them."""
    run = ["bench/run.py"] if all_drains else [str(ROOT / "bench" / "drains_only.py"), ",".join(GOAL_DRAINS)]
    cmd = [sys.executable, *run, "--url", url, "--private", "--only", PHASES, "--out", str(out)]
    env = {**os.environ, "PYTHONPATH": str(tree)}
    subprocess.run([*cmd, *(["--quick"] if quick else [])], cwd=tree, env=env, check=True,
                   stdout=subprocess.DEVNULL)
    return json.loads(out.read_text())


def _table(results: dict[str, list[dict]], rev: str, url: str) -> str:
    lines = [f"this tree against {rev}, one private Valkey ({url}), {len(results['this'])} alternating runs "
             "each of bench/run.py's enqueue, drain and memory phases (their counts): medians (runs)", "",
             f"| figure | this | {rev} | ratio | goal |  |", "|---|---|---|---|---|---|"]
    for label, phase, key, how, goal in GOALS:
        mine, theirs = _figures(results["this"], phase, key), _figures(results[rev], phase, key)
        if not mine or not theirs:
            lines.append(f"| {label} | n/a | n/a |  |  |  |")
            continue
        a, b = statistics.median(mine), statistics.median(theirs)
        ratio = a if how == "own" else a / b
        verdict = "" if goal is None else ("met" if _holds(ratio, goal) else "MISSED")
        lines.append(f"| {label} | {_show(a, mine)} | {_show(b, theirs)} | {ratio:.2f}x | "
                     f"{'' if goal is None else f'{goal[0]} {goal[1]}x'} | {verdict} |")
    return "\n".join(lines)


def _figures(runs: list[dict], phase: str, key: str) -> list[float]:
    return [r[phase][key] for r in runs if isinstance(r.get(phase), dict) and r[phase].get(key) is not None]


def _holds(value: float, goal: tuple[str, float]) -> bool:
    return value <= goal[1] if goal[0] == "<=" else value >= goal[1]


def _show(median: float, runs: list[float]) -> str:
    fmt = "{:,.2f}" if median < 100 else "{:,.0f}"
    return f"{fmt.format(median)} ({', '.join(fmt.format(r) for r in runs)})"


if __name__ == "__main__":
    sys.exit(main())
