"""List scheduler vs baselines and vs the analytic lower bound on a grid; prints a table, writes JSON.

    python benchmarks/list_scheduler_quality.py                        # writes list_scheduler_quality.json
    python benchmarks/list_scheduler_quality.py --quick --json q.json  # any other run names its file

Grid: p in {2, 4, 8, 16}, m in {p, 2p, 4p}, v in {1, 2 looped, 2 vshape}, caps {1, 2, p/2, p, none},
split on/off, comm 0 and 1/2, w_mem 1/2; costs (``--costs``): equal (tf = tb = tw = 1), unequal
(tb = 2), unbalanced (per stage, first 1.5x and last 2x). Per instance: the best baseline that fits the
cap (from ``applicable``), the list scheduler's best makespan, the lower bound, and the ratios.
Then the runtime of every rule at p = 32, m = 256, v = 1 and 2.
"""

from __future__ import annotations

import argparse
import json
import time
from fractions import Fraction
from itertools import product
from pathlib import Path

from bench_args import json_path, run_facts

from schedc.baselines import BASELINES, applicable
from schedc.problem import Problem, StageCost
from schedc.simulate import simulate
from schedc.solvers.bounds import lower_bound
from schedc.solvers.list_scheduler import RULES, best_list_result, run_rule

HERE = Path(__file__).resolve().parent
COSTS = {
    "equal": {},
    "unequal": {"tf": 1, "tb": 2, "tw": 1},
}


def unbalanced(p: int, v: int) -> dict:
    """Per-stage costs: the last stage (loss head) twice as heavy, the first 1.5 times."""
    costs = []
    for s in range(p * v):
        k = Fraction(2) if s == p * v - 1 else Fraction(3, 2) if s == 0 else Fraction(1)
        costs.append(StageCost(k / v, 2 * k / v, k / v))
    return {"stage_costs": tuple(costs)}


def grid(quick: bool, costs: tuple[str, ...] = ("equal",)) -> list[Problem]:
    out = []
    for p in (2, 4, 8) if quick else (2, 4, 8, 16):
        for m in (p, 2 * p, 4 * p):
            for v, placement in ((1, "looped"), (2, "looped"), (2, "vshape")):
                caps = [*sorted({1, 2, max(1, p // 2), p}), None]
                comms = (Fraction(0), Fraction(1, 2))
                for cap, split, comm, cost in product(caps, (True, False), comms, costs):
                    extra = unbalanced(p, v) if cost == "unbalanced" else COSTS[cost]
                    out.append(Problem(p=p, m=m, v=v, placement=placement, split=split, comm=comm,
                                       mem=() if cap is None else (cap,), **extra))
    return out


def fits(problem: Problem, peaks) -> bool:
    return all(c is None or pk <= c for pk, c in zip(peaks, problem.mem, strict=True))


def measure(problem: Problem) -> dict:
    base_name, base = None, None
    for name in applicable(problem):
        tl = simulate(problem, BASELINES[name].build(problem))
        if fits(problem, tl.peak_mem) and (base is None or tl.makespan < base):
            base_name, base = name, tl.makespan
    start = time.perf_counter()
    best = best_list_result(problem)
    seconds = time.perf_counter() - start
    lb = lower_bound(problem)
    return {
        "instance": problem.describe(),
        "baseline": base_name,
        "baseline_makespan": None if base is None else float(base),
        "list_makespan": float(best.makespan),
        "list_rule": str(best.variant),
        "lower_bound": float(lb),
        "vs_baseline": None if base is None else float(best.makespan / base),
        "vs_bound": float(best.makespan / lb),
        "seconds": seconds,
    }


def runtime() -> list[dict]:
    rows = []
    for v in (1, 2):
        for cap in ((), (8,)):
            problem = Problem(p=32, m=256, v=v, mem=cap)
            for rule in RULES:
                start = time.perf_counter()
                result = run_rule(problem, rule)
                rows.append({"instance": problem.describe(), "tasks": problem.num_tasks, "rule": rule,
                             "seconds": time.perf_counter() - start, "makespan": float(result.makespan)})
            start = time.perf_counter()
            best = best_list_result(problem)
            rows.append({"instance": problem.describe(), "tasks": problem.num_tasks, "rule": "best",
                         "seconds": time.perf_counter() - start, "makespan": float(best.makespan),
                         "lower_bound": float(lower_bound(problem))})
    return rows


def _costs(text: str) -> tuple[str, ...]:
    names = tuple(name.strip() for name in text.split(","))
    unknown = [name for name in names if name not in (*COSTS, "unbalanced")]
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown {', '.join(unknown)}: choose from "
                                         f"{', '.join((*COSTS, 'unbalanced'))}")
    return names


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="p up to 8")
    parser.add_argument("--costs", type=_costs, default=("equal",),
                        help="comma list of equal, unequal, unbalanced (default equal)")
    parser.add_argument("--json", help="output JSON (default: list_scheduler_quality.json beside this "
                        "script, for a run of the default configuration only)")
    args = parser.parse_args()
    path = json_path(parser, args, HERE / "list_scheduler_quality.json")
    started = run_facts()
    rows = [measure(pr) for pr in grid(args.quick, args.costs)]
    for r in rows:
        if r["vs_baseline"] is None or r["vs_baseline"] > 1 or r["vs_bound"] > 1.15:
            base = "-" if r["baseline"] is None else f"{r['baseline']} {r['baseline_makespan']:g}"
            print(f"{r['instance']:70s} base {base:22s} list {r['list_makespan']:8g} ({r['list_rule']:20s}) "
                  f"lb {r['lower_bound']:8g} x{r['vs_bound']:.3f}")
    with_base = [r for r in rows if r["vs_baseline"] is not None]
    print(f"\n{len(rows)} instances; {len(with_base)} with a baseline that fits the cap")
    print(f"list worse than best fitting baseline: {sum(r['vs_baseline'] > 1 for r in with_base)}; "
          f"equal: {sum(r['vs_baseline'] == 1 for r in with_base)}; "
          f"better: {sum(r['vs_baseline'] < 1 for r in with_base)}")
    if with_base:
        ratio = [r["vs_baseline"] for r in with_base]
        print(f"list / baseline: mean {sum(ratio) / len(ratio):.4f}, min {min(ratio):.4f}, "
              f"max {max(ratio):.4f}")
    ratios = sorted(r["vs_bound"] for r in rows)
    print(f"list / lower bound: mean {sum(ratios) / len(ratios):.4f}, median {ratios[len(ratios) // 2]:.4f}, "
          f"90% {ratios[int(0.9 * len(ratios))]:.4f}, max {ratios[-1]:.4f}; "
          f"at the bound: {sum(x == 1 for x in ratios)}")
    slow = max(rows, key=lambda r: r["seconds"])
    print(f"slowest best_list_schedule: {slow['seconds']:.2f} s ({slow['instance']})")
    timing = runtime()
    print("\nruntime per rule at p=32 m=256:")
    for t in timing:
        lb = f" lb {t['lower_bound']:g}" if "lower_bound" in t else ""
        print(f"  {t['instance']:60s} {t['tasks']:6d} tasks {t['rule']:7s} {t['seconds']:.3f} s "
              f"makespan {t['makespan']:g}{lb}")
    with open(path, "w") as f:
        json.dump({"meta": started, "grid": rows, "runtime": timing}, f, indent=1)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
