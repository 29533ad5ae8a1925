"""Long runs of microbatches with one stage per rank under a cap: bounds and wall time against the limit,
with and without the chained-entries bound and the LP-free short searches, in one run.

    python benchmarks/long_runs.py                  # writes benchmarks/long_runs.json
    python benchmarks/long_runs.py --json l.json    # any other file

Per instance and limit (2 workers): the plan, the lower bound, the gap and the wall seconds of
``solve`` as it is ("now"), and with ``portfolio.CHAIN_SHARE`` and ``cpsat_params.LP_SECONDS_PER_TASK``
set to 0 ("before": no chained bound, and every search keeps CP-SAT's LP workers, whose first LP
solve no limit interrupts). Ratios to the limit, not absolute seconds, are what compare across
machines; both sides run on the same machine minutes apart.
"""

from __future__ import annotations

import argparse
import time
from contextlib import contextmanager
from fractions import Fraction
from pathlib import Path

import machine_speed
from bench_args import json_path, write_rows

from schedc.problem import Problem
from schedc.solvers import cpsat_params, portfolio

HERE = Path(__file__).resolve().parent
CASES: tuple[tuple[dict, float], ...] = (
    (dict(p=8, m=64, mem=(4,)), 10.0), (dict(p=8, m=64, mem=(4,)), 4.0), (dict(p=8, m=96, mem=(4,)), 10.0),
    (dict(p=8, m=128, mem=(4,)), 10.0), (dict(p=8, m=128, mem=(4,), tb=2), 10.0),
    (dict(p=8, m=128, mem=(2,)), 10.0), (dict(p=16, m=128, mem=(8,)), 10.0),
    (dict(p=4, m=128, mem=(2,)), 10.0), (dict(p=4, m=200, mem=(2,)), 10.0),
    (dict(p=16, m=48, mem=(5,), tb=2), 4.0),
)
"""(problem, time limit): p=8 m=64 to 128 under cap p/2 and its variants, p=4 and p=16 at m=128 and
more, and two short limits where a search used to start CP-SAT's LP past its budget."""


@contextmanager
def before_the_change():
    """No chained bound, and CP-SAT's LP workers in every search, as before both were added."""
    saved = portfolio.CHAIN_SHARE, cpsat_params.LP_SECONDS_PER_TASK
    portfolio.CHAIN_SHARE = cpsat_params.LP_SECONDS_PER_TASK = 0.0
    try:
        yield
    finally:
        portfolio.CHAIN_SHARE, cpsat_params.LP_SECONDS_PER_TASK = saved


def run(problem: Problem, limit: float) -> dict:
    start = time.perf_counter()
    plan = portfolio.solve(problem, time_limit=limit, workers=2)
    wall = time.perf_counter() - start
    gap = float((plan.makespan - plan.lower_bound) / plan.makespan)
    return {"makespan": str(plan.makespan), "bound": str(plan.lower_bound), "gap": gap,
            "wall": round(wall, 2), "wall_per_limit": round(wall / limit, 3)}


def measure(problem: Problem, limit: float) -> dict:
    """One instance before and now, in that order."""
    with before_the_change():
        old = run(problem, limit)
    return {"problem": problem.describe(), "tasks": problem.num_tasks, "limit": limit,
            "before": old, "now": run(problem, limit)}


def main() -> None:
    parser = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    parser.add_argument("--json", help="output file (default: the committed benchmarks/long_runs.json)")
    args = parser.parse_args()
    out = json_path(parser, args, HERE / "long_runs.json")
    speed = {"start": machine_speed.measure()}  # the limits are wall clock: how fast the machine ran
    start, rows = time.perf_counter(), []
    print(f"{'instance':<56} {'limit':>5}  {'before: plan / bound, gap, wall':>34}  {'now':>34}")
    for spec, limit in CASES:
        row = measure(Problem(**spec), limit)
        rows.append(row)
        cells = [f"{float(Fraction(r['makespan'])):g} / {float(Fraction(r['bound'])):g}, "
                 f"{100 * r['gap']:.1f}%, {r['wall']:.1f} s" for r in (row["before"], row["now"])]
        print(f"{row['problem'][:56]:<56} {limit:5g}  {cells[0]:>34}  {cells[1]:>34}", flush=True)
    speed["end"] = machine_speed.measure()
    summary = {"instances": len(rows), "seconds": round(time.perf_counter() - start, 1), "speed": speed,
               "worst_wall_per_limit_before": max(r["before"]["wall_per_limit"] for r in rows),
               "worst_wall_per_limit_now": max(r["now"]["wall_per_limit"] for r in rows)}
    print(f"wall / limit at worst: before {summary['worst_wall_per_limit_before']:.2f}, "
          f"now {summary['worst_wall_per_limit_now']:.2f}")
    write_rows(out, summary, rows)


if __name__ == "__main__":
    main()
