"""Steady-state check for capped instances: the shortest period at which a repeating pattern of k
microbatches fits the caps, and the plan that pattern unrolls to.

Why: on the grid's worst misses (two stages per rank, tight cap) both the plans and the bounds keep
moving with more compute, so the gap alone does not say which side is off. A pattern is a modulo
schedule: microbatch c*k + j runs task (kind, stage) at c * period + start(kind, stage, j). The
smallest period at which one fits says how fast the middle of a self-repeating schedule can go, per
microbatch, against the solver's plan / m and its bound / m. It is not a lower bound for finite m
(warm-up and cool-down hold less memory, and a schedule need not repeat), and its unrolled plan is
only a plan; the solver does not use either (measured: worse than its plans, see SOLVER_NOTES.md).

    python benchmarks/steady_state.py                     # the grid's misses, k = 1 and 2
    python benchmarks/steady_state.py --only 'p8-m32' --k 2 --time-limit 60 --json p8.json

The model, for a period P (integer ticks of ``Problem.time_scale``):
- start(t) = P q(t) + phase(t), phase in [0, P); every dependency of one microbatch holds on the
  starts, with its latency; per (stage, kind) the k microbatches run in order, the last one before
  the first of the next repetition (the solver's lossless order, kept here as an assumption);
- a rank runs one task at a time: the phase intervals and their copies shifted by P never overlap
  (two arcs of a circle of length P meet iff some copy of one meets the other on the line);
- the cap: an activation alive for n P + r holds its demand n times at every phase, and once more
  on the arc [phase(F), phase(F) + r); the arcs, doubled as above, share what the n's leave.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
import time
from dataclasses import asdict, dataclass
from fractions import Fraction
from pathlib import Path

from ortools.sat.python import cp_model

from schedc.actions import Action
from schedc.dag import dependencies, lag
from schedc.exact import to_json
from schedc.plan import Plan
from schedc.problem import Problem
from schedc.solvers.cpsat_model import activation_releases

DEFAULT_PROBE_SECONDS = 20.0
HERE = Path(__file__).resolve().parent


@dataclass
class Pattern:
    """A built modulo model for k microbatches and one period."""

    model: cp_model.CpModel
    starts: dict[Action, cp_model.IntVar]


MAX_ROOM = 2**40
"""A capacity no stream of these models can fill: a larger cap is clamped to it."""


def build(problem: Problem, k: int, period: int) -> Pattern:
    scale = problem.time_scale
    one = [Action(kind, s, j) for j in range(k) for s in range(problem.num_stages) for kind in problem.kinds]
    dur = {a: int(problem.duration(a.kind, a.stage) * scale) for a in one}
    horizon = k * (sum(dur.values()) + 4 * problem.num_stages * int(problem.comm * scale)) + 8 * period
    model = cp_model.CpModel()
    starts = {a: model.new_int_var(0, horizon, str(a)) for a in one}
    phase = {a: _phase(model, starts[a], period, horizon) for a in one}
    model.add(starts[Action("F", 0, 0)] == 0)  # the pattern is shift-invariant: pin its first task
    for a in one:
        for d in dependencies(problem, a):
            model.add(starts[a] >= starts[d] + dur[d] + int(lag(problem, d, a) * scale))
        nxt = Action(a.kind, a.stage, (a.mb + 1) % k)
        model.add(starts[nxt] + (period if a.mb == k - 1 else 0) >= starts[a] + dur[a])
    for r in range(problem.p):
        mine = [a for a in one if problem.stage_rank[a.stage] == r and dur[a]]
        model.add_no_overlap([model.new_fixed_size_interval_var(phase[a] + shift, dur[a], "")
                              for a in mine for shift in (0, period)])
        if problem.mem[r] is not None:  # even one of m or more: an endless stream may hold more
            _cap(model, problem, r, k, starts, phase, dur, period, horizon)
    return Pattern(model, starts)


def _phase(model: cp_model.CpModel, start: cp_model.IntVar, period: int, horizon: int) -> cp_model.IntVar:
    q = model.new_int_var(0, horizon // period + 1, "")
    phase = model.new_int_var(0, period - 1, "")
    model.add(start == period * q + phase)
    return phase


def _cap(model: cp_model.CpModel, problem: Problem, r: int, k: int, starts, phase, dur, period: int,
         horizon: int) -> None:
    """Rank r's cap at every phase (module doc): whole laps held throughout, the rest as an arc."""
    arcs, demands, laps = [], [], []
    for alloc, release, demand in activation_releases(problem, r):
        if alloc.mb >= k:
            continue
        n = model.new_int_var(0, horizon // period + 1, "")
        rest = model.new_int_var(0, period - 1, "")
        model.add(starts[release] + dur[release] - starts[alloc] == n * period + rest)
        end = model.new_int_var(0, 2 * period, "")
        model.add(end == phase[alloc] + rest)
        for shift in (0, period):
            arcs.append(model.new_interval_var(phase[alloc] + shift, rest, end + shift, ""))
            demands.append(demand)
        laps.append(n * demand)
    cap = min(math.floor(problem.mem[r] * problem.memory_scale), MAX_ROOM)  # 1e19 overflowed CP-SAT
    room = model.new_int_var(0, cap, "")
    model.add(room == cap - sum(laps))
    model.add_cumulative(arcs, demands, room)


def solve(pattern: Pattern, time_limit: float, workers: int,
          hint: dict[Action, int] | None = None) -> tuple[str, dict[Action, int] | None]:
    """Feasibility only: any pattern at this period will do."""
    for a, value in (hint or {}).items():
        pattern.model.add_hint(pattern.starts[a], value)
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = time_limit
    solver.parameters.num_workers = workers
    status = solver.solve(pattern.model)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return solver.status_name(status), None
    return "FEASIBLE", {a: solver.value(v) for a, v in pattern.starts.items()}


def repeat(starts: dict[Action, int], k: int, period: int) -> dict[Action, int]:
    """A one-microbatch pattern as a k-microbatch one of period k * period (same schedule)."""
    return {Action(a.kind, a.stage, j): t + j * period for a, t in starts.items() for j in range(k)}


def unroll(problem: Problem, k: int, period: int, starts: dict[Action, int]) -> Plan:
    """The pattern repeated over the problem's microbatches, replayed as soon as possible (the
    per-rank orders keep the pattern's memory, and earlier microbatches only free more)."""
    timed = [(c * period + t, Action(a.kind, a.stage, c * k + a.mb))
             for c in range(-(-problem.m // k)) for a, t in starts.items() if c * k + a.mb < problem.m]
    orders: list[list[Action]] = [[] for _ in range(problem.p)]
    for _, a in sorted(timed, key=lambda x: x[0]):
        orders[problem.stage_rank[a.stage]].append(a)
    return Plan(problem=problem, orders=tuple(map(tuple, orders)), source=f"steady-state k={k}")


@dataclass
class Row:
    name: str
    k: int
    period: Fraction | None = None
    """Smallest period found feasible, per microbatch."""
    infeasible: Fraction | None = None
    """Largest period proven infeasible, per microbatch."""
    unrolled: Fraction | None = None
    plan: Fraction | None = None
    bound: Fraction | None = None
    m: int = 0
    seconds: float = 0.0


def smallest_period(problem: Problem, k: int, time_limit: float, workers: int,
                    known: tuple[int, dict[Action, int]] | None = None) -> tuple:
    """Bisection over periods (ticks) between the busiest rank's work and a feasible one: ``known``
    (a k-microbatch pattern), else the first feasible doubling. A probe that finds nothing in time
    counts as a failure, so the result is the smallest period found, not proven smallest.
    Returns (period, its starts, largest period proven infeasible or None)."""
    scale = problem.time_scale
    work = max(sum(problem.duration(kind, s) for s in problem.rank_stages[r] for kind in problem.kinds)
               for r in range(problem.p))
    lo, proven = math.ceil(k * work * scale), None
    hi, best = known if known is not None else (None, None)
    probe, most = lo, 2 * k * _serial(problem, scale)  # one microbatch at a time always fits
    while hi is None:
        if probe > most:
            raise SystemExit(f"no {k}-microbatch pattern found up to a period of {Fraction(most, scale)} "
                             f"in {time_limit:g} s per probe: give more --time-limit")
        status, starts = solve(build(problem, k, probe), time_limit, workers)
        if starts is not None:
            hi, best = probe, starts
        else:
            proven = probe if status == "INFEASIBLE" else proven
            lo, probe = probe + 1, probe * 2
    while lo < hi:
        mid = (lo + hi) // 2
        status, starts = solve(build(problem, k, mid), time_limit, workers, hint=best)
        if starts is not None:
            hi, best = mid, starts
        else:
            proven = mid if status == "INFEASIBLE" and (proven is None or mid > proven) else proven
            lo = mid + 1
    return hi, best, proven


def _serial(problem: Problem, scale: int) -> int:
    """Ticks of one microbatch run alone: every task and every transfer one after another."""
    tasks = sum(problem.duration(kind, s) for s in range(problem.num_stages) for kind in problem.kinds)
    return int((tasks + 2 * problem.num_stages * problem.comm) * scale)


def measure(name: str, problem: Problem, ks: list[int], time_limit: float, workers: int,
            grid: dict) -> list[Row]:
    """One row per k; k > 1 starts from the one-microbatch pattern repeated."""
    scale, rows, single = problem.time_scale, [], None
    for k in sorted(ks):
        t0 = time.perf_counter()
        known = None if single is None or k == 1 else (k * single[0], repeat(single[1], k, single[0]))
        period, starts, proven = smallest_period(problem, k, time_limit, workers, known)
        if k == 1:
            single = period, starts
        row = Row(name, k, Fraction(period, scale * k),
                  None if proven is None else Fraction(proven, scale * k), m=problem.m)
        plan = unroll(problem, k, period, starts)
        if not plan.fits():  # the model's cap accounting is wrong, not a result to print
            raise SystemExit(f"{name}: the unrolled pattern exceeds the cap (peak {plan.timeline.peak_mem})")
        row.unrolled = plan.makespan
        if name in grid:
            row.plan, row.bound = Fraction(grid[name]["value"]), Fraction(grid[name]["lower_bound"])
        row.seconds = time.perf_counter() - t0
        print_table([row], header=False, stream=sys.stderr)  # progress; the table follows on stdout
        rows.append(row)
    return rows


def _f(x: Fraction | None) -> str:
    return "-" if x is None else f"{float(x):g}"


def print_table(rows: list[Row], header: bool = True, stream=sys.stdout) -> None:
    if header:
        print(f"{'instance':40} {'k':>2} {'period/mb':>9} {'infeas<=':>8} {'unrolled':>9} "
              f"{'plan':>8} {'plan/m':>7} {'bound':>8} {'bound/m':>7} {'s':>5}", file=stream)
    for r in rows:
        plan_m, bound_m = (None if x is None else x / r.m for x in (r.plan, r.bound))
        print(f"{r.name:40} {r.k:>2} {_f(r.period):>9} {_f(r.infeasible):>8} {_f(r.unrolled):>9} "
              f"{_f(r.plan):>8} {_f(plan_m):>7} {_f(r.bound):>8} {_f(bound_m):>7} {r.seconds:5.0f}",
              file=stream, flush=True)


def main(argv: list[str] | None = None) -> int:
    sys.path.insert(0, str(HERE))
    from bench_args import at_least, json_path, pattern, seconds, write_rows

    parser = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    parser.add_argument("--only", metavar="REGEX", type=pattern, help="grid instances whose name matches "
                        "(default: the misses with at most 2,000 tasks in solver_quality.json)")
    parser.add_argument("--k", type=at_least(1), action="append",
                        help="microbatches per pattern (default 1 and 2)")
    parser.add_argument("--time-limit", type=seconds, default=DEFAULT_PROBE_SECONDS,
                        help=f"seconds per period probe (default {DEFAULT_PROBE_SECONDS:g})")
    parser.add_argument("--workers", type=at_least(1), default=2, help="CP-SAT workers (default 2)")
    parser.add_argument("--json", help="output JSON (default: steady_state.json beside this script, for a "
                        "run with no other option only: any other needs --json)")
    args = parser.parse_args(argv)
    path = json_path(parser, args, HERE / "steady_state.json")
    from quality_instances import grid, hard
    from solver_quality import GAP_TASKS

    records = {r["name"]: r for r in json.loads((HERE / "solver_quality.json").read_text())["records"]}
    instances = {i.name: i.problem for i in grid(60) + hard(60)}
    if args.only:
        names = [n for n in instances if re.search(args.only, n)]
        if not names:
            parser.error(f"--only {args.only!r} matches no grid instance")
    else:
        names = [n for n, r in records.items()
                 if n in instances and r["verdict"] == "miss" and r["tasks"] <= GAP_TASKS]
    ks = args.k or [1, 2]
    rows = [row for n in names
            for row in measure(n, instances[n], ks, args.time_limit, args.workers, records)]
    print_table(rows)
    grid_commit = json.loads((HERE / "solver_quality.json").read_text())["meta"].get("commit")
    write_rows(path, {"k": ks, "probe_seconds": args.time_limit, "workers": args.workers,
                      "grid_commit": grid_commit},
               [{key: to_json(v) if isinstance(v, Fraction) else v for key, v in asdict(r).items()}
                for r in rows])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
