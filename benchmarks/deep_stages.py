"""List plans with three or four stages per rank under a cap, without and with the lookahead runs.

    python benchmarks/deep_stages.py                  # writes benchmarks/deep_stages.json
    python benchmarks/deep_stages.py --json d.json    # any other file
    python benchmarks/deep_stages.py --solve 10 --json benchmarks/deep_stages_solved.json

The runs of ``list_portfolio.DEEP_RUNS`` (the ``lookahead`` admission) were picked on p = 4 and 8,
v = 3 and 4, m = 2p and 4p; this grid was not used to pick them: p in {6, 16}, v in {3, 4}, m in
{p, 3p}, caps p/4 and p/2 (at least 1), equal costs or tb 3/2, tw 1/2, comm 1/4; problems above
12,000 tasks are left out. Per instance: the portfolio's best list makespan without the deep runs
(the list scheduler before them), with the lookahead runs, with the allocating runs
(``list_portfolio.ALLOCATING_RUNS``, picked on other instances too) as well (never longer: the
portfolio keeps its best run), and the analytic lower bound. With ``--solve SECONDS`` also a
solve's plan and bound in that time (the default workers): how far the searches move the list plans
and the bound phases the bounds (about 5 minutes at 10 s: 4.6 in the committed run;
``benchmarks/SOLVER_NOTES.md``).
"""

from __future__ import annotations

import argparse
import time
from fractions import Fraction
from itertools import product
from pathlib import Path

from bench_args import commit, json_path, seconds, write_rows

from schedc.problem import Problem
from schedc.solvers.bounds import lower_bound
from schedc.solvers.list_portfolio import DEEP_RUNS, allocating_runs, variants
from schedc.solvers.list_scheduler import run_variant

HERE = Path(__file__).resolve().parent
MAX_TASKS = 12_000
COSTS = ({}, {"tb": Fraction(3, 2), "tw": Fraction(1, 2), "comm": Fraction(1, 4)})
SHARES = (Fraction(1, 4), Fraction(1, 2))
"""Caps as a share of p (at least 1)."""


def grid() -> list[Problem]:
    out = []
    for p, v, spread, cost, share in product((6, 16), (3, 4), (1, 3), COSTS, SHARES):
        problem = Problem(p=p, m=spread * p, v=v, mem=(max(1, share * p),), **cost)
        if problem.num_tasks <= MAX_TASKS:
            out.append(problem)
    return out


def measure(problem: Problem) -> dict:
    """The best list makespan over the portfolio without the deep runs, with the lookahead runs, and
    with the allocating runs too."""
    allocating = allocating_runs(problem)
    deep = {*DEEP_RUNS, *allocating}
    before = min(run_variant(problem, v).makespan for v in variants(problem) if v not in deep)
    lookahead = min(before, *(run_variant(problem, v).makespan for v in DEEP_RUNS))
    after = min(lookahead, *(run_variant(problem, v).makespan for v in allocating))
    return {"p": problem.p, "m": problem.m, "v": problem.v, "mem": str(problem.mem[0]),
            "tb": str(problem.tb), "tw": str(problem.tw), "comm": str(problem.comm),
            "tasks": problem.num_tasks, "before": str(before), "lookahead": str(lookahead),
            "after": str(after),
            "bound": str(lower_bound(problem)), "gain": float((before - after) / before),
            "allocating_gain": float((lookahead - after) / lookahead)}


def solved(problem: Problem, time_limit: float) -> dict:
    """A solve's plan, bound and gap in ``time_limit`` seconds; the gap as ``Plan.gap`` and the CLI
    give it, (plan - bound) / plan (the committed run at e64f851 divided by the bound: its mean, 5.89%,
    is 5.30% of the plans)."""
    from schedc.solvers import solve

    plan = solve(problem, time_limit=time_limit)
    return {"solved": str(plan.value), "solved_bound": str(plan.lower_bound),
            "solved_gap": float(plan.gap)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="output file (default: the committed benchmarks/deep_stages.json)")
    parser.add_argument("--solve", metavar="SECONDS", type=seconds,
                        help="also solve each instance in this time and report its plan, bound and gap")
    args = parser.parse_args()
    out = json_path(parser, args, HERE / "deep_stages.json")
    start, rows = time.perf_counter(), []
    solves = f" {'solved':>9} {'bound':>9} {'gap':>6}" if args.solve else ""
    print(f"{'instance':<40} {'before':>9} {'lookahead':>9} {'after':>9} {'bound':>9} {'gain':>6}{solves}")
    for problem in grid():
        row = measure(problem) | (solved(problem, args.solve) if args.solve else {})
        rows.append(row)
        name = f"p{row['p']} m{row['m']} v{row['v']} mem={row['mem']} tb={row['tb']} comm={row['comm']}"
        keys = ("before", "lookahead", "after", "bound") + (("solved", "solved_bound") if args.solve else ())
        values = [float(Fraction(row[key])) for key in keys]
        columns = " ".join(f"{x:9.3f}" for x in values[:4])
        extra = f" {values[4]:9.3f} {values[5]:9.3f} {100 * row['solved_gap']:5.1f}%" if args.solve else ""
        print(f"{name:<40} {columns} {100 * row['gain']:5.1f}%{extra}", flush=True)
    gains, allocating = [row["gain"] for row in rows], [row["allocating_gain"] for row in rows]
    summary = {"instances": len(rows), "shorter": sum(g > 0 for g in gains),
               "mean_gain": sum(gains) / len(gains), "max_gain": max(gains),
               "allocating_shorter": sum(g > 0 for g in allocating),
               "allocating_mean_gain": sum(allocating) / len(allocating),
               "allocating_max_gain": max(allocating),
               "seconds": round(time.perf_counter() - start, 1), "commit": commit()}
    if args.solve:
        gaps = [row["solved_gap"] for row in rows]
        summary |= {"solve_seconds": args.solve, "mean_solved_gap": sum(gaps) / len(gaps),
                    "solved_within_1pct": sum(g <= 0.01 for g in gaps)}
    print(f"{summary['shorter']} of {summary['instances']} shorter, by {100 * summary['mean_gain']:.1f}% on "
          f"average, {100 * summary['max_gain']:.1f}% at most; by the allocating runs, against the "
          f"lookahead runs: {summary['allocating_shorter']}, {100 * summary['allocating_mean_gain']:.1f}% on "
          f"average, {100 * summary['allocating_max_gain']:.1f}% at most")
    if args.solve:
        print(f"solved in {args.solve:g} s: mean gap {100 * summary['mean_solved_gap']:.2f}%, "
              f"{summary['solved_within_1pct']} of {len(rows)} within 1%")
    write_rows(out, summary, rows)


if __name__ == "__main__":
    main()
