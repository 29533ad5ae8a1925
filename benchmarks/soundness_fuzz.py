"""Soundness fuzz: random problems solved several ways; no bound above any plan, every plan valid.

    python benchmarks/soundness_fuzz.py                        # writes benchmarks/soundness_fuzz.json
    python benchmarks/soundness_fuzz.py --problems 20 --json f.json

Every lower bound schedc prints is a claim about all schedules, and a wrong one would call a plan
optimal that is not. The tests check the bounds against exhaustive search on tiny problems; this
script checks them where the bound phases run (the rank relaxations, the block of ranks, the chained
entries, the horizon probes, rank 0's end for spans), on random problems of up to ``MAX_TASKS``
tasks (``--max-tasks``, ``--min-tasks``). Per problem, several solves (``runs_for``), every fitting
baseline, and random moves from every plan for both objectives. Checks, one line per broken claim:

- every plan validates (``schedc.validate``), fits its caps, and no solve raises; every plan's
  makespan, spans and peaks are the same in ``independent_replay`` (the model's definitions
  written apart from schedc's DAG and simulator) as in the simulator;
- per objective, no bound (each one a progress report announced, and each final one) exceeds the
  least value of any plan of the problem: the solves' (either objective's: a makespan plan is a
  span plan too), the fitting baselines' and the moves';
- a solve that says optimal has that least value; no makespan solve is slower than a fitting baseline.

The run exits 1 if any claim broke. The JSON keeps every solve's figures, which phases solved a
CP-SAT model (``WORK``) and which raised the bound, and per problem the objectives for which a
random move beat every solve (``moves_beat``).
"""

from __future__ import annotations

import argparse
import random
import time
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field, replace
from fractions import Fraction
from pathlib import Path

from bench_args import at_least, commit, json_path, write_rows
from independent_replay import replay

from schedc.baselines import applicable, baseline_plan
from schedc.errors import SchedcError, ScheduleError
from schedc.plan import Plan
from schedc.problem import Problem, StageCost
from schedc.solvers import (
    backends,
    bound_phases,
    chain_bound,
    first_rank_end,
    portfolio,
    probe,
    relaxation,
    span_bound,
)
from schedc.solvers.chain_bound import chain_applies
from schedc.solvers.feasibility import min_feasible_cap
from schedc.solvers.portfolio import solve
from schedc.validate import validate

HERE = Path(__file__).resolve().parent
MAX_TASKS = 800
"""Largest problem drawn by default (``--max-tasks``): at this size a solve of a few seconds still
reaches each phase; the grid's targets go to 2,000 tasks, where only the long solves do."""
MOVES = 200
"""Random moves tried from each plan, for each objective (each one a replay of the whole plan)."""
DRAWS = 10_000
LARGEST_DRAWN = 1536
"""p=8 m=32 v=2 split: the families' largest problem (said when a band of sizes is never drawn)."""
HALVES = (Fraction(1, 2), Fraction(1), Fraction(3, 2), Fraction(2))


@dataclass(frozen=True)
class Run:
    """One solve: what it was asked."""

    objective: str
    limit: float
    workers: int
    seed: int
    backend: str = "auto"
    forced: str = ""
    """'phases': ``FORCED`` set for the run (``forced_phases``), so that a short limit reaches the
    phases; 'suffixes': ``SUFFIXES`` too."""


@dataclass
class Found:
    """What the runs of one problem found: their plans, every bound announced, the moves' plans."""

    plans: list[Plan] = field(default_factory=list)
    bounds: list[tuple[str, Fraction, str]] = field(default_factory=list)
    """(objective, bound, who announced it)."""
    rows: list[dict] = field(default_factory=list)
    moved: list[Plan] = field(default_factory=list)
    """Plans that random moves found (they disprove bounds; they claim nothing)."""
    errors: list[str] = field(default_factory=list)
    """Solves that raised: a bound above the solve's own plan is one (``portfolio._finish``)."""


def random_problem(rng: random.Random, max_tasks: int = MAX_TASKS, min_tasks: int = 0) -> Problem:
    """A problem of ``min_tasks`` to ``max_tasks`` tasks from the grid's families, drawn afresh until
    its size is within them (a ValueError after ``DRAWS`` draws outside)."""
    for _ in range(DRAWS):
        problem = _draw(rng)
        if min_tasks <= problem.num_tasks <= max_tasks:
            return problem
    raise ValueError(f"no problem of {min_tasks} to {max_tasks} tasks in {DRAWS} draws "
                     f"(the largest drawn have {LARGEST_DRAWN} tasks)")


def _draw(rng: random.Random) -> Problem:
    """Half from the hard family (two stages per rank, four ranks or more, capped: where the gaps stay
    open and every bound phase runs), half from all the grid's families and long runs of v = 1."""
    hard = rng.random() < 0.5
    placement = rng.choice(("looped", "looped", "vshape"))
    v = 2 if placement == "vshape" or hard else rng.choice((1, 1, 2))
    p = rng.choice((4, 6, 8)) if hard else rng.choice((2, 3, 4, 4, 6, 8))
    long_run = v == 1 and p <= 4 and rng.random() < 0.5  # where the chained entries apply
    m = rng.choice((8, 16)) * p + rng.randrange(3) if long_run else rng.choice((1, 2, 3, 4)) * p
    m = rng.choice((2, 3, 4)) * p if hard else m
    costs = rng.choice(("equal", "unequal", "per-stage", "random"))
    kwargs: dict = dict(p=p, m=m, v=v, placement=placement, split=rng.random() < 0.6,
                        comm=rng.choice((Fraction(0), Fraction(0), Fraction(1, 2), Fraction(1))),
                        w_mem=rng.choice((Fraction(0), Fraction(1, 2), Fraction(1))))
    if costs == "unequal":
        kwargs.update(tf=1, tb=2, tw=1)
    elif costs == "random":
        kwargs.update(tf=rng.choice(HALVES), tb=rng.choice(HALVES), tw=rng.choice((Fraction(0), *HALVES)))
    elif costs == "per-stage":
        kwargs["stage_costs"] = tuple(StageCost(rng.choice(HALVES), rng.choice(HALVES), rng.choice(HALVES))
                                      for _ in range(p * v))
    return _with_caps(Problem(**kwargs), rng, always=hard)


def _with_caps(problem: Problem, rng: random.Random, always: bool) -> Problem:
    """No cap, one cap, or one per rank (some uncapped), from the smallest feasible to p/(2v) above it."""
    if not always and rng.random() < 0.2:
        return problem
    least = min_feasible_cap(problem)

    def cap() -> Fraction:
        return least + Fraction(rng.randrange(problem.p + 1), 2 * problem.v)

    mem = (cap(),) if rng.random() < 0.7 else tuple(None if rng.random() < 0.3 else cap()
                                                    for _ in range(problem.p))
    return replace(problem, mem=mem)  # with stage costs too: tf, tb, tw are derived again


def runs_for(problem: Problem, rng: random.Random, long: bool) -> list[Run]:
    """Both objectives with one and two workers, a forced run, a backend named now and then, window
    LNS where the chained entries apply, and a long makespan solve (the probes' and the block's real
    shares) when ``long``."""
    seed = rng.randrange(1000)
    forced = Run("makespan" if rng.random() < 0.8 else "span", 4.0, 2, seed + 4,
                 forced=rng.choice(("phases", "suffixes")))
    runs = [Run("makespan", 2.0, 2, seed), Run("makespan", 1.0, 1, seed + 1), Run("span", 2.0, 2, seed + 2),
            Run("span", 1.5, 1, seed + 3), forced]
    if rng.random() < 0.4:
        named = rng.choice(("cp-sat", "lns"))
        runs.append(Run(rng.choice(("makespan", "span")), 3.0, 2, seed + 5, backend=named))
    if chain_applies(problem):  # window LNS proves nothing on the whole model: the chain runs after it
        runs.append(Run("makespan", 4.0, 2, seed + 6, backend="lns"))
    if long:
        runs.append(Run("makespan", 45.0 if problem.v == 2 else 12.0, 2, seed + 7))
    return runs


FORCED = ((backends, "WHOLE_SEARCH_MAX_TASKS", 0), (bound_phases, "BLOCK_MIN_SECONDS", 0.3),
          (relaxation, "MIN_RANK_SECONDS", 0.1), (portfolio, "PROBE_MIN_SECONDS", 0.1),
          (probe, "MIN_PROBE_SECONDS", 0.1), (span_bound, "FIRST_RANK_MIN_SECONDS", 0.1))
"""What a forced run changes: every search leaves time for the phases after it (not only above 400
tasks), and the phases' least times are lowered, so that a short limit reaches them all."""
SUFFIXES = ((bound_phases, "RELAXATION_MAX_TASKS", 60),)
"""And a 'suffixes' run: the relaxations cut to suffixes of microbatches (and the block, which
relaxes whole ranks only, is skipped)."""


@contextmanager
def forced_phases(suffixes: bool = False):
    """``FORCED`` (and ``SUFFIXES``) set inside the ``with``, restored after it."""
    switches = FORCED + SUFFIXES if suffixes else FORCED
    saved = [(module, name, getattr(module, name)) for module, name, _ in switches]
    for module, name, value in switches:
        setattr(module, name, value)
    try:
        yield
    finally:
        for module, name, value in saved:
            setattr(module, name, value)


def _rank_label(args: tuple, kwargs: dict) -> str:
    ranks = args[1] if len(args) > 1 else kwargs["rank"]
    if not isinstance(ranks, int):
        return "block relaxation"
    return "rank relaxation, suffix" if kwargs.get("first", 0) else "rank relaxation"


WORK = ((relaxation, "relaxed_rank_bound", _rank_label), (probe, "probe", "probe"),
        (first_rank_end, "first_rank_end", "rank 0 end"), (span_bound, "_relaxation", "span relaxation"),
        (chain_bound, "_solve", "chained entries"))
"""The CP-SAT solves of the bound phases, looked up by their callers at each call: counted, they
show which phases did work, where a phase's own call may return at once for want of time."""


@contextmanager
def work_counted(ran: dict[str, int]):
    """Counts each bound phase's CP-SAT solves into ``ran`` (by ``WORK``'s labels) inside the ``with``."""
    saved = [(module, name, getattr(module, name)) for module, name, _ in WORK]

    def counted(solver, label):
        def call(*args, **kwargs):
            name = label(args, kwargs) if callable(label) else label
            ran[name] = ran.get(name, 0) + 1
            return solver(*args, **kwargs)
        return call

    for (module, name, solver), (_, _, label) in zip(saved, WORK, strict=True):
        setattr(module, name, counted(solver, label))
    try:
        yield
    finally:
        for module, name, solver in saved:
            setattr(module, name, solver)


def solve_run(problem: Problem, run: Run, found: Found) -> None:
    """One solve; its plan, its final bound and every bound it announced go into ``found``, and an
    error it raised (a bound above its own plan is one) into ``found.errors``."""
    raised: list[tuple[Fraction, str]] = []

    def heard(event) -> None:  # the first report is the incumbent's, with the analytic bound
        if not raised or event.bound > raised[-1][0]:
            raised.append((event.bound, event.source if raised else "analytic"))

    start, ran = time.perf_counter(), {}
    try:
        forced = forced_phases(run.forced == "suffixes") if run.forced else nullcontext()
        with work_counted(ran), forced:
            plan = _solve(problem, run, heard)
    except SchedcError as err:
        found.errors.append(f"{run}: {type(err).__name__}: {err}")
        return
    wall = time.perf_counter() - start
    found.plans.append(plan)
    found.bounds += [(run.objective, bound, source) for bound, source in raised]
    found.bounds.append((run.objective, plan.lower_bound, f"final {run.objective}"))
    found.rows.append({"run": run.__dict__, "status": plan.status, "value": str(plan.value),
                       "bound": str(plan.lower_bound), "wall": round(wall, 2), "source": plan.source,
                       "raised_by": [source for _, source in raised], "worked": ran})


def _solve(problem: Problem, run: Run, heard) -> Plan:
    return solve(problem, time_limit=run.limit, workers=run.workers, seed=run.seed,
                 objective=run.objective, backend=run.backend, progress=heard)


def objective_value(plan: Plan, objective: str) -> Fraction:
    return plan.timeline.makespan if objective == "makespan" else plan.timeline.max_span


def random_moves(plan: Plan, objective: str, rng: random.Random, moves: int = MOVES) -> Plan:
    """Hill climbing by swaps of two neighbours in one rank's order: the best fitting plan met. Any
    order that replays is a schedule, so a plan found here below a bound disproves the bound."""
    best = plan
    for _ in range(moves):
        rank = rng.randrange(plan.problem.p)
        order = list(best.orders[rank])
        if len(order) < 2:
            continue
        k = rng.randrange(len(order) - 1)
        order[k], order[k + 1] = order[k + 1], order[k]
        orders = (*best.orders[:rank], tuple(order), *best.orders[rank + 1:])
        try:
            moved = Plan(problem=plan.problem, orders=orders, source="move", objective=objective)
        except ScheduleError:  # a swap that deadlocks is not a schedule
            continue
        if moved.fits() and objective_value(moved, objective) <= objective_value(best, objective):
            best = moved
    return best


def replay_differs(plan: Plan) -> str | None:
    """Where ``independent_replay`` disagrees with the simulator's figures, one line saying how (None
    where they agree, or where a split problem's orders fuse a backward, which it does not model)."""
    if plan.problem.split and any(action.kind == "B" for order in plan.orders for action in order):
        return None
    figures = replay(plan.problem, plan.orders)
    timeline = plan.timeline
    if figures == (timeline.makespan, timeline.spans, timeline.peak_mem):
        return None
    return (f"{plan.source} ({plan.objective}): the independent replay gives makespan {figures[0]}, spans "
            f"{list(map(str, figures[1]))}, peaks {list(map(str, figures[2]))}; the simulator "
            f"{timeline.makespan}, {list(map(str, timeline.spans))}, {list(map(str, timeline.peak_mem))}")


def broken_claims(problem: Problem, found: Found, baselines: list[Plan]) -> list[str]:
    """Every claim the runs made that the plans disprove, one line each."""
    errors = [f"{plan.source} ({plan.objective}): {error}"
              for plan in found.plans for error in validate(plan)]
    errors += [f"{plan.source} ({plan.objective}) exceeds its cap" for plan in found.plans if not plan.fits()]
    fitting = found.plans + found.moved + [plan for plan in baselines if plan.fits()]
    errors += [error for plan in fitting if (error := replay_differs(plan))]
    for objective in ("makespan", "span") if fitting else ():
        least = min(objective_value(plan, objective) for plan in fitting)
        errors += [f"{who}: bound {bound} above a plan's {objective} {least}"
                   for what, bound, who in found.bounds if what == objective and bound > least]
        errors += [f"{plan.source}: optimal at {plan.value}, but a plan has {least}" for plan in found.plans
                   if plan.objective == objective and plan.status == "optimal" and plan.value != least]
    for plan in found.plans:
        slower = [b.source for b in baselines if b.fits() and plan.objective == "makespan"
                  and b.makespan < plan.makespan]
        errors += [f"{plan.source}: makespan {plan.makespan} slower than fitting {name}" for name in slower]
    return errors


def check_problem(problem: Problem, rng: random.Random, long: bool) -> dict:
    """All runs and checks of one problem, as one JSON row. Moves start from every plan, for both
    objectives: a plan wrongly called optimal is the one a move must beat."""
    found = Found()
    for run in runs_for(problem, rng, long):
        solve_run(problem, run, found)
    baselines = []
    for name in applicable(problem):
        try:
            baselines.append(baseline_plan(name, problem))
        except SchedcError:  # as the solver's incumbent does: a baseline may not build every problem
            continue
    found.moved = [random_moves(plan, objective, rng)
                   for plan in found.plans for objective in ("makespan", "span")]
    errors = found.errors + broken_claims(problem, found, baselines)
    return {"problem": problem.describe(), "tasks": problem.num_tasks, "runs": found.rows,
            "baselines": len(baselines), "moves_beat": moves_beat(found), "errors": errors}


def moves_beat(found: Found) -> list[str]:
    """The objectives for which a random move beat every solve's plan: how often the solves leave a
    gain one swap away, so how much the moves add to the plans that bounds are checked against."""
    return [objective for objective in ("makespan", "span") if found.plans and found.moved
            and min(objective_value(plan, objective) for plan in found.moved)
            < min(objective_value(plan, objective) for plan in found.plans)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problems", type=at_least(1), default=200, help="random problems (default 200)")
    parser.add_argument("--long", type=at_least(0), default=16,
                        help="of them, how many also get one long makespan solve (default 16)")
    parser.add_argument("--max-tasks", type=at_least(100, ": fewer are seldom drawn"), default=MAX_TASKS,
                        help=f"largest problem drawn, in tasks (default {MAX_TASKS})")
    parser.add_argument("--min-tasks", type=at_least(0), default=0,
                        help="smallest problem drawn, in tasks (default 0)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random problems (default 0)")
    parser.add_argument("--json", help="output file (default: the committed benchmarks/soundness_fuzz.json)")
    args = parser.parse_args()
    try:  # before any work: a band no draw reaches
        random_problem(random.Random(args.seed), args.max_tasks, args.min_tasks)
    except ValueError as err:
        parser.error(str(err))
    out = json_path(parser, args, HERE / "soundness_fuzz.json")
    rng, rows, start = random.Random(args.seed), [], time.perf_counter()
    every = max(1, args.problems // max(1, args.long)) if args.long else 0
    for i in range(args.problems):
        problem = random_problem(rng, args.max_tasks, args.min_tasks)
        row = check_problem(problem, rng, long=bool(every) and i % every == 0 and i // every < args.long)
        rows.append(row)
        verdict = "ok" if not row["errors"] else f"{len(row['errors'])} BROKEN: {row['errors'][0]}"
        print(f"{i + 1:4d} {row['problem'][:70]:<70} {row['tasks']:4d}  {verdict}", flush=True)
    summary = _summary(rows, time.perf_counter() - start)
    write_rows(out, {**summary, "commit": commit(), "seed": args.seed}, rows)
    print(" ".join(f"{key}={value}" for key, value in summary.items()))
    raise SystemExit(1 if summary["broken"] else 0)


def _summary(rows: list[dict], seconds: float) -> dict:
    runs = [run for row in rows for run in row["runs"]]
    raised: dict[str, int] = {}
    worked: dict[str, int] = {}
    for run in runs:
        for source in set(run["raised_by"]):
            raised[source] = raised.get(source, 0) + 1
        for phase in run["worked"]:
            worked[phase] = worked.get(phase, 0) + 1
    return {"problems": len(rows), "runs": len(runs), "optimal": sum(r["status"] == "optimal" for r in runs),
            "broken": sum(bool(row["errors"]) for row in rows), "seconds": round(seconds, 1),
            "moves_beat_solves": {objective: sum(objective in row.get("moves_beat", ()) for row in rows)
                                  for objective in ("makespan", "span")},
            "runs_where_worked": dict(sorted(worked.items())),
            "runs_where_raised_by": dict(sorted(raised.items()))}


if __name__ == "__main__":
    main()
