"""Periodic-middle plans: the solver's full model with the middle microbatches held to a period.

Why: ``steady_state.py`` asks how fast a pattern repeated for ever can run, and unrolls it to poor
plans (an unrolled pattern keeps its steady state through the warm-up and the cool-down). Here the
pattern is a restriction of the solver's own CP-SAT model instead: every task of microbatch j + k
starts ``period`` after the same task of microbatch j, for j from ``head`` to m - 1 - ``head`` - k,
and the first and last ``head`` microbatches are free. The equalities leave CP-SAT one cycle of k
microbatches plus the ends to place, so it finds plans that its search of the full model reaches
late or never (SOLVER_NOTES.md). The middle is a finite run, not a modulo schedule: its F, I and W
streams need not interleave as they would for ever. Plans must end by the grid's plan
(``solver_quality.json``), or for a problem file (``--problem``) by its list plan, so INFEASIBLE
means no such plan as good as that one at that period.
Every answer is a plan of the problem (the equalities only restrict), replayed and checked; none
is a bound. The solver does not run this: which (k, period) pairs are feasible is not known in
advance, and a probe takes tens of seconds.

    python benchmarks/periodic_middle.py --only 'p8-m32-v2-split-c0-mem4-eq' --k 3 --period 10 --json m.json
    python benchmarks/periodic_middle.py --problem deep.toml --k 1 --period 3.5 --json m.json
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from dataclasses import asdict, dataclass
from fractions import Fraction
from pathlib import Path

from ortools.sat import sat_parameters_pb2

from schedc.actions import Action
from schedc.exact import to_json
from schedc.plan import Plan
from schedc.problem import Problem
from schedc.solvers.cpsat_model import build_model
from schedc.solvers.cpsat_solve import extract_orders, solve_model

HERE = Path(__file__).resolve().parent
DEFAULT_HEAD = 3
EXPAND = {"max_alldiff_domain_size": sat_parameters_pb2.SatParameters().max_alldiff_domain_size}
"""CP-SAT's own all-different expansion, which the solver's full model turns off
(``cpsat_params.default_params``: there presolve expanded no-overlaps of one-tick tasks into a
Boolean per task and tick and never finished). Held to a period, the model leaves few tasks free,
and the expansion pays: the `--v 2` instance (k = 3, period 10, head 8, ending by 117.5) proves
115.5 in 51-59 s with it (two runs) and finds nothing in 120 s without."""


@dataclass
class Row:
    name: str
    k: int
    period: Fraction
    """Time units per cycle of k microbatches."""
    head: int
    status: str
    plan: Fraction | None = None
    """The periodic-middle plan's makespan (its replay)."""
    grid_plan: Fraction | None = None
    """The plan to beat: the grid's (``solver_quality.json``), or a problem file's list plan."""
    grid_bound: Fraction | None = None
    seconds: float = 0.0


def middle_plan(problem: Problem, k: int, period: Fraction, *, head: int, horizon: Fraction,
                time_limit: float, workers: int) -> tuple[str, Plan | None]:
    """CP-SAT's status and the best plan with the middle held to ``period`` (module doc), ending
    by ``horizon``; no plan where CP-SAT found none in time (or proved there is none)."""
    if (why := off_ticks(problem, period) or no_middle(problem, k, head)) is not None:
        raise ValueError(why)
    cm = build_model(problem, horizon=horizon)
    ticks = period * cm.scale
    for a, start in cm.starts.items():
        if head <= a.mb and a.mb + k <= problem.m - 1 - head:
            cm.model.add(cm.starts[Action(a.kind, a.stage, a.mb + k)] == start + int(ticks))
    result = solve_model(cm, time_limit=time_limit, workers=workers, params=EXPAND)
    if result.starts is None:
        return result.status, None
    plan = Plan(problem=problem, orders=extract_orders(problem, result.starts),
                source=f"periodic middle k={k} period={period}")
    if plan.violations() or not plan.fits() or plan.value > result.objective:
        raise SystemExit(f"internal error: the periodic-middle solution does not replay ({plan.value})")
    return result.status, plan


def no_middle(problem: Problem, k: int, head: int) -> str | None:
    """Why no microbatch would be held to the period, or None: the plain optimum, reported at any
    period (1 per microbatch where one rank's own work per microbatch is 4)."""
    if problem.m < 2 * head + k + 1:
        return (f"--k {k} and --head {head} hold no microbatch of m = {problem.m} to the period "
                f"(it needs m >= 2 * head + k + 1 = {2 * head + k + 1})")
    return None


def off_ticks(problem: Problem, period: Fraction) -> str | None:
    """Why ``period`` cannot be a model's period (not a whole number of its ticks), or None."""
    scale = problem.time_scale  # the model's time unit (``cpsat_model.build_model``)
    if (period * scale).denominator != 1:
        return f"period {period} is not a whole number of the model's ticks (1/{scale})"
    return None


def _f(x: Fraction | None) -> str:
    return "-" if x is None else f"{float(x):g}"


def print_row(row: Row, stream=sys.stdout) -> None:
    print(f"{row.name:40} {row.k:>2} {_f(row.period):>7} {_f(row.period / row.k):>7} {row.head:>4} "
          f"{row.status:>10} {_f(row.plan):>8} {_f(row.grid_plan):>8} {_f(row.grid_bound):>8} "
          f"{row.seconds:5.0f}", file=stream, flush=True)


def main(argv: list[str] | None = None) -> int:
    sys.path.insert(0, str(HERE))
    from bench_args import at_least, pattern, seconds, writable_file, writable_folder

    parser = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--only", metavar="REGEX", type=pattern, help="grid instances whose name matches")
    source.add_argument("--problem", metavar="FILE",
                        help="a problem file (TOML or JSON, as `schedc solve --problem` reads) instead")
    parser.add_argument("--k", type=at_least(1), required=True, help="microbatches per cycle")
    parser.add_argument("--period", type=_period, action="append", required=True,
                        help="time units per cycle (repeat to try several)")
    parser.add_argument("--head", type=at_least(0), default=DEFAULT_HEAD,
                        help=f"free microbatches at each end (default {DEFAULT_HEAD})")
    parser.add_argument("--time-limit", type=seconds, default=60.0, help="seconds per probe (default 60)")
    parser.add_argument("--workers", type=at_least(1), default=2, help="CP-SAT workers (default 2)")
    parser.add_argument("--json", required=True, type=writable_file, help="output JSON")
    parser.add_argument("--plans", metavar="DIR", type=writable_folder,
                        help="also write each plan found to DIR as a plan file "
                             "(NAME-kK-periodP.json; `schedc validate` and `schedc show` read it)")
    args = parser.parse_args(argv)
    records, instances = _instances(parser, args)
    for name, problem in instances.items():  # all before the first search, which takes minutes
        for period in args.period:
            if (why := off_ticks(problem, period)) is not None:
                parser.error(f"--period: {why}")
        if (why := no_middle(problem, args.k, args.head)) is not None:
            parser.error(f"{name}: {why}")
    print(f"{'instance':40} {'k':>2} {'period':>7} {'per mb':>7} {'head':>4} {'status':>10} {'plan':>8} "
          f"{'grid':>8} {'bound':>8} {'s':>5}")
    rows = []
    for name, problem in instances.items():
        record = records.get(name, {})
        grid_plan = Fraction(record["value"]) if "value" in record else None
        for period in args.period:
            t0 = time.perf_counter()
            status, plan = middle_plan(problem, args.k, period, head=args.head, workers=args.workers,
                                       horizon=grid_plan or _serial(problem), time_limit=args.time_limit)
            if plan is not None and args.plans:
                _save(plan, Path(args.plans) / f"{name}-k{args.k}-period{str(period).replace('/', '_')}.json")
            rows.append(Row(name, args.k, period, args.head, status, None if plan is None else plan.value,
                            grid_plan, Fraction(record["lower_bound"]) if "lower_bound" in record else None,
                            time.perf_counter() - t0))
            print_row(rows[-1])
    Path(args.json).write_text(json.dumps([{key: to_json(v) if isinstance(v, Fraction) else v
                                            for key, v in asdict(r).items()} for r in rows], indent=1))
    return 0


def _instances(parser: argparse.ArgumentParser, args: argparse.Namespace) -> tuple[dict, dict[str, Problem]]:
    """The records of plans to beat and the problems by name: the grid's, or a problem file's with
    its list plan as the record (``--problem``)."""
    if args.problem is not None:
        from schedc.errors import SchedcError
        from schedc.problem_io import load_problem
        from schedc.solvers.list_scheduler import best_list_result

        try:
            problem = load_problem(args.problem)
            listed = best_list_result(problem).makespan
        except SchedcError as err:
            parser.error(f"--problem: {err}")
        name = Path(args.problem).stem
        return {name: {"value": str(listed)}}, {name: problem}
    from quality_instances import grid, hard

    records = {r["name"]: r for r in json.loads((HERE / "solver_quality.json").read_text())["records"]}
    instances = {i.name: i.problem for i in grid(60) + hard(60) if re.search(args.only, i.name)}
    if not instances:
        parser.error(f"--only {args.only!r} matches no grid instance")
    return records, instances


def _save(plan: Plan, path: Path) -> None:
    from schedc.plan_json import save_plan

    path.parent.mkdir(parents=True, exist_ok=True)
    save_plan(plan, str(path))


def _period(text: str) -> Fraction:
    """An argparse type: a time > 0, exactly (``10``, ``19/2``, ``9.5``)."""
    try:
        value = Fraction(text)
    except (ValueError, ZeroDivisionError):
        raise argparse.ArgumentTypeError(f"must be a number such as 10, 19/2 or 9.5, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {text}")
    return value


def _serial(problem: Problem) -> Fraction:
    """A horizon every schedule fits in: all work and every transfer in a row."""
    per_mb = sum(problem.duration(kind, s) for s in range(problem.num_stages) for kind in problem.kinds)
    return (per_mb + 2 * problem.num_stages * problem.comm) * problem.m


if __name__ == "__main__":
    raise SystemExit(main())
