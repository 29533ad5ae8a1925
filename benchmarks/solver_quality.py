"""Solver quality benchmark: the issue's targets, measured (never a timed test).

For each instance: the best baseline that fits the cap, the list scheduler, the solver's plan (its
makespan, proven lower bound, gap, status) and the time to the first and to the best solution.
Prints a table and writes JSON.

    python benchmarks/solver_quality.py                        # headline, full grid, scale
    python benchmarks/solver_quality.py --quick --json q.json  # headline + hard cases, 1-2 minutes
    python benchmarks/solver_quality.py --only 'p8-m32' --time-limit 30 --json p8.json
    python benchmarks/solver_quality.py --jobs 4 --pin --json grid.json  # 2 cores per worker (they wrap)
    python benchmarks/solver_quality.py --caps --json benchmarks/solver_caps.json  # the cap sweep, 20 min

Only the default configuration writes the committed ``solver_quality.json``; any other needs its
own ``--json`` (``bench_args.json_path``). The solver's phases take shares of the time limit (a
quarter for the list portfolio, the stall and LNS switches), so a shorter limit is not the first
seconds of a 60 s run: a quick run's verdicts do not predict the grid's (p=4 m=16 vshape mem=3/2:
83 with a 6.6% gap at 15 s, against 79.5 proven optimal at 6.5 s of a 60 s run). Those budgets are
wall-clock seconds, so the JSON's ``meta.speed`` records how fast the machine ran fixed workloads at
the start and at the end of the run (``machine_speed.py``): compare two runs' verdicts only with it.

Targets (issue 3): headline (p=8 m=32 cap 4) proven optimal within 2 s end to end; on the grid never
slower than a fitting baseline, gap <= 1% within 60 s up to 2,000 tasks; scale (p=32 m=256) a valid
plan within 60 s faster than every applicable baseline, gap <= 2%.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import re
import statistics
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path

import machine_speed
from bench_args import add_json_option, at_least, commit, json_path, pattern, seconds
from quality_instances import Instance, cap_sweep, grid, hard, headline, scale

from schedc.exact import to_json
from schedc.problem import Problem
from schedc.problem_io import problem_to_dict
from schedc.solvers.cores import usable_cores

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "solver_quality.json"
GAP_TASKS = 2000
"""Instances up to this many tasks carry the 1% gap target; larger ones the 2% scale target."""
CLI_RUNS = 3
"""Runs of the headline's command, end to end: its verdict takes their median. Single samples on
these shared 2 cores spread widely (on 2026-12-03 the grid's one sample took 2.37 s where six runs of
the same command right after took 1.17 to 1.30 s)."""


@dataclass
class Record:
    name: str
    group: str
    tasks: int
    time_limit: float
    baseline: str | None = None
    baseline_value: Fraction | None = None
    applicable_best: str | None = None
    applicable_best_value: Fraction | None = None
    list_value: Fraction | None = None
    value: Fraction | None = None
    lower_bound: Fraction | None = None
    status: str = ""
    source: str = ""
    first_s: float | None = None
    best_s: float | None = None
    total_s: float | None = None
    cli_s: float | None = None
    """The median of ``cli_runs``: one sample on these shared cores moved by up to a second."""
    cli_runs: list[float] = field(default_factory=list)
    fits: bool = False
    notes: list[str] = field(default_factory=list)

    @property
    def gap(self) -> float | None:
        if self.value is None or self.lower_bound is None or self.value == 0:
            return None
        return float((self.value - self.lower_bound) / self.value)

    def verdict(self) -> str:
        """Whether the instance meets its target (the issue's numbers)."""
        if self.value is None or not self.fits:
            return "FAIL"
        if self.baseline_value is not None and self.value > self.baseline_value:
            return "FAIL"
        gap = self.gap or 0.0
        if self.group == "headline":
            return "ok" if self.status == "optimal" and (self.cli_s or self.total_s or 99) <= 2 else "miss"
        if self.group == "scale":
            # "faster than every applicable baseline": those that are plans of the problem, i.e. fit its
            # cap (uncapped, every applicable one fits); none can beat a plan at the bound
            faster = self.baseline_value is None or self.value < self.baseline_value or \
                self.value == self.lower_bound
            return "ok" if faster and gap <= 0.02 and (self.total_s or 99) <= 60 else "miss"
        limit = 0.01 if self.tasks <= GAP_TASKS else 0.02
        return "ok" if gap <= limit else "miss"

    def to_json(self) -> dict:
        out = {k: (to_json(v) if isinstance(v, Fraction) else v) for k, v in self.__dict__.items()}
        out["gap"] = self.gap
        out["verdict"] = self.verdict()
        return out


# ---- measuring ------------------------------------------------------------------------------


def measure(inst: Instance, workers: int | None, cli: bool) -> Record:
    from schedc.baselines import applicable, baseline_plan
    from schedc.solvers import solve
    from schedc.solvers.incumbent import fitting_baselines, list_plan

    problem = inst.problem
    rec = Record(inst.name, inst.group, problem.num_tasks, inst.time_limit)
    fitting = fitting_baselines(problem)
    if fitting:
        best = min(fitting, key=lambda b: b.makespan)
        rec.baseline, rec.baseline_value = best.source, best.makespan
    every = [baseline_plan(n, problem) for n in applicable(problem)]
    if every:
        best = min(every, key=lambda b: b.makespan)
        rec.applicable_best, rec.applicable_best_value = best.source, best.makespan
    lp = list_plan(problem, "makespan")
    rec.list_value = None if lp is None else lp.makespan
    events = []
    t0 = time.perf_counter()
    plan = solve(problem, time_limit=inst.time_limit, workers=workers, progress=events.append)
    rec.total_s = time.perf_counter() - t0
    rec.value, rec.lower_bound = plan.makespan, plan.lower_bound
    rec.status, rec.source = plan.status, plan.source
    rec.fits = plan.fits()
    if events:
        rec.first_s = events[0].elapsed
        rec.best_s = next(e.elapsed for e in events if e.best == events[-1].best)
    if cli:
        rec.cli_runs = [_cli_seconds(problem, inst.time_limit, workers) for _ in range(CLI_RUNS)]
        rec.cli_s = statistics.median(rec.cli_runs)
    return rec


def _cli_seconds(problem: Problem, time_limit: float, workers: int | None) -> float:
    """Wall time of ``schedc solve`` as a user runs it: interpreter start, imports, solve, summary."""
    import tempfile

    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as spec:
        json.dump(problem_to_dict(problem), spec)
    args = [sys.executable, "-m", "schedc", "solve", "--problem", spec.name, "--time-limit", str(time_limit),
            "--quiet"]
    if workers:
        args += ["--workers", str(workers)]
    t0 = time.perf_counter()
    subprocess.run(args, check=True, capture_output=True)
    seconds = time.perf_counter() - t0
    os.unlink(spec.name)
    return seconds


def _run(job: tuple[Instance, int | None, bool]) -> Record:
    return measure(*job)


def _pin_worker(slots: multiprocessing.SimpleQueue, cores: list[int]) -> None:
    """Each pool worker takes its own 2 cores, for every job it runs: pinning per job let two jobs
    running at once share a pair, and a worker's narrowed affinity narrowed its next pick too."""
    k = slots.get()
    os.sched_setaffinity(0, {cores[(2 * k) % len(cores)], cores[(2 * k + 1) % len(cores)]})


def _pool(jobs: int, pin: bool) -> ProcessPoolExecutor:
    if not pin or not hasattr(os, "sched_setaffinity"):
        return ProcessPoolExecutor(jobs)
    context = multiprocessing.get_context("fork")  # the slots queue goes to the workers as they fork
    slots = context.SimpleQueue()
    for k in range(jobs):
        slots.put(k)
    return ProcessPoolExecutor(jobs, mp_context=context, initializer=_pin_worker,
                               initargs=(slots, sorted(os.sched_getaffinity(0))))


# ---- output ---------------------------------------------------------------------------------


def _f(x) -> str:
    if x is None:
        return "-"
    if isinstance(x, Fraction):
        return str(x.numerator) if x.denominator == 1 else f"{float(x):.2f}"
    return f"{x:.2f}" if isinstance(x, float) else str(x)


COLUMNS = ("instance", "tasks", "best fitting baseline", "list", "solver", "bound", "gap", "status",
           "first s", "best s", "total s", "target")


def row(r: Record) -> list[str]:
    base = "-" if r.baseline is None else f"{r.baseline} {_f(r.baseline_value)}"
    gap = "-" if r.gap is None else f"{r.gap * 100:.2f}%"
    total = _f(r.total_s) + (f" (cli {r.cli_s:.2f})" if r.cli_s else "")
    return [r.name, str(r.tasks), base, _f(r.list_value), _f(r.value), _f(r.lower_bound), gap, r.status,
            _f(r.first_s), _f(r.best_s), total, r.verdict()]


def print_table(records: list[Record]) -> None:
    rows = [list(COLUMNS)] + [row(r) for r in records]
    widths = [max(len(x[i]) for x in rows) for i in range(len(COLUMNS))]
    for k, cells in enumerate(rows):
        print("  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)), flush=True)
        if k == 0:
            print("  ".join("-" * w for w in widths))


def summary(records: list[Record]) -> dict:
    out = {
        "instances": len(records),
        "targets_met": sum(r.verdict() == "ok" for r in records),
        "over_cap_or_no_plan": [r.name for r in records if r.value is None or not r.fits],
        "slower_than_fitting_baseline": [r.name for r in records if r.value is not None and r.fits and
                                         r.baseline_value is not None and r.value > r.baseline_value],
    }
    for group in ("grid", "caps"):
        small = [r for r in records if r.group == group and r.tasks <= GAP_TASKS]
        if not small:
            continue
        gaps = sorted(r.gap or 0.0 for r in small)
        out |= {f"{group}_small": len(small),
                f"{group}_small_within_1pct": sum(g <= 0.01 for g in gaps),
                f"{group}_small_optimal": sum(r.status == "optimal" for r in small),
                f"{group}_small_max_gap": gaps[-1],
                f"{group}_small_median_gap": gaps[len(gaps) // 2]}
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="headline and the hard cases, short limits")
    parser.add_argument("--only", metavar="REGEX", type=pattern, help="instances whose name matches")
    parser.add_argument("--time-limit", type=seconds,
                        help="seconds per instance (default 60; quick 15, the scale instances 60; the "
                             "headline always 10)")
    parser.add_argument("--workers", type=at_least(1),
                        help="CP-SAT workers per instance (default: the cores it may use)")
    parser.add_argument("--jobs", type=at_least(1), default=1, help="instances measured in parallel")
    parser.add_argument("--pin", action="store_true", help="pin each --jobs worker to 2 cores (Linux)")
    parser.add_argument("--no-scale", action="store_true", help="leave out the p=32 m=256 instances")
    parser.add_argument("--caps", action="store_true",
                        help="the cap sweep alone, replacing every other instance: p=4 and 8, m=16, v=2 "
                             "looped and vshape, every cap from 3/2 (p=4) or 2 (p=8) to p")
    add_json_option(parser, RESULTS, ", the grid the README quotes")
    args = parser.parse_args(argv)
    if args.pin and args.jobs < 2:
        parser.error("--pin pins the --jobs workers: it needs --jobs 2 or more")
    path = json_path(parser, args, RESULTS)
    _load_solvers()

    limit = args.time_limit or (15.0 if args.quick else 60.0)
    if args.caps:
        instances = cap_sweep(limit)
    else:
        instances = [headline(), *hard(limit)]
        if not args.quick:
            instances += grid(limit)
        if not args.no_scale and (not args.quick or args.only):
            instances += scale(args.time_limit or 60.0)
    if args.only:
        instances = [i for i in instances if re.search(args.only, i.name)]
        if not instances:
            parser.error(f"--only {args.only!r} matches no instance")
    seen: set[str] = set()
    instances = [i for i in instances if not (i.name in seen or seen.add(i.name))]
    jobs = [(inst, args.workers, inst.group == "headline") for inst in instances]
    started = {"date": time.strftime("%Y-%m-%d %H:%M"), "commit": commit()}  # the code the run loads
    speed = {"start": machine_speed.measure()}
    # a pinned job's pair (pairs wrap, and so are shared, past the affinity's cores), else this
    # process's affinity and quota
    cores = min(2, usable_cores()) if args.pin else usable_cores()
    shared = args.pin and 2 * args.jobs > usable_cores()
    print(f"{len(jobs)} instances, {args.jobs} at a time, {cores} cores each{' (shared)' if shared else ''} "
          f"({os.cpu_count()} on the machine); speed {speed['start']}", flush=True)
    if args.jobs > 1:
        with _pool(args.jobs, args.pin) as pool:
            records = list(pool.map(_run, jobs))
    else:
        records = []
        for job in jobs:
            records.append(_run(job))
            print("  " + "  ".join(row(records[-1])), flush=True)
    print_table(records)
    speed["end"] = machine_speed.measure()
    print(f"speed at the end {speed['end']} (machine_speed.py: larger is slower)")
    result = {"summary": summary(records), "records": [r.to_json() for r in records],
              "meta": {"cores": cores, "machine_cores": os.cpu_count(), "time_limit": limit,
                       "workers": args.workers or cores,
                       "jobs": args.jobs, "pin": args.pin, "pairs_shared": shared, **started, "speed": speed}}
    print(json.dumps(result["summary"], indent=1))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=1))
    print(f"wrote {path}")
    return 0


def _load_solvers() -> None:
    """Imports every backend now, so that a long run measures one version of the code even if the
    files change while it runs."""
    import schedc.solvers.cpsat_solve
    import schedc.solvers.incumbent
    import schedc.solvers.list_scheduler
    import schedc.solvers.lns
    import schedc.solvers.relaxation  # noqa: F401


if __name__ == "__main__":
    sys.exit(main())
