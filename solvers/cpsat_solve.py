"""Solves a built CP-SAT model and turns its start times into per-rank orders.

Only the orders leave this module: the plan's times are always the simulator's replay of them.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from fractions import Fraction

from ortools.sat.python import cp_model

from schedc.actions import Action
from schedc.errors import ScheduleError
from schedc.plan import Plan
from schedc.problem import Problem
from schedc.simulate import Orders
from schedc.solvers import wall_guard
from schedc.solvers.cores import usable_cores
from schedc.solvers.cpsat_model import CpsatModel, add_floor, add_hint, build_model, span_horizon
from schedc.solvers.cpsat_params import search_params, set_limits, set_param
from schedc.solvers.interruptible import run_interruptible
from schedc.solvers.progress import Interrupted, Progress, ProgressFn
from schedc.solvers.symmetry import canonical_starts


@dataclass(frozen=True)
class CpsatResult:
    """What CP-SAT found: the best starts (None if no solution), its objective and proven bound."""

    status: str
    starts: dict[Action, Fraction] | None
    objective: Fraction | None
    bound: Fraction
    wall: float
    interrupted: bool = False
    """Stopped by Ctrl-C: the caller should stop too and return what it has."""
    stopped: str | None = None
    """Why an ``EarlyStop`` ended the search before its limit: "stalled" or "switched"."""
    deterministic_time: float = 0.0
    """CP-SAT's own measure of the work done, for budgets that must not depend on the wall clock."""

    @property
    def optimal(self) -> bool:
        return self.status == "OPTIMAL"


@dataclass(frozen=True)
class EarlyStop:
    """Wall-clock reasons to end a hinted search before its limit, so that the caller can hand the
    rest of the time to a search that suits the instance better (``backends.CpsatSolver``)."""

    stall: float | None = None
    """Neither the best solution nor (unless ``plans_only``) the bound moved for this many seconds:
    "stalled"."""
    stall_cpu: bool = False
    """Count the stall in the process's CPU seconds per worker, not wall seconds: on a loaded machine
    the search then gets the CPU time it would have had on an idle one (see ``backends._early_stop``)."""
    switch: float | None = None
    """Past this many seconds, not stalled, with a gap above ``switch_gap``: "switched"."""
    switch_gap: float = 0.01
    plans_only: bool = False
    """Only a better plan counts as progress for the stall, not a better bound: the objective
    lower-bound search's bound creeps up by small steps where it cannot prove the plan, which would
    keep a search from ever stalling (``backends.HINTED_LB_SEARCH``, ``backends.EXPLORE``)."""


class Clock:
    """The time left to a sequence of searches, in the unit ``set_limits`` uses: deterministic time
    with one worker (so the same seed repeats the same sequence), else wall time. Time outside the
    searches counts only against the wall-clock guard."""

    def __init__(self, limit: float, workers: int) -> None:
        self.limit, self.workers, self.t0, self.used = limit, workers, time.perf_counter(), 0.0

    def charge(self, solver: cp_model.CpSolver) -> None:
        self.spend(solver.deterministic_time)

    def spend(self, deterministic_time: float) -> None:
        self.used += deterministic_time

    def left(self, enough: float = 0.0) -> float:
        """With one worker the deterministic time left, or 0 once the wall-clock guard (this
        sequence's, or the call's) has passed: the guard stops a sequence and never sizes a budget
        (each search's own wall cap, ``wall_guard.guard``, cuts it at the call's deadline). Such a
        stop counts as a cut (``wall_guard.watched``) where at least ``enough``, the least the
        caller would still have used, was left."""
        wall = time.perf_counter() - self.t0
        if self.workers != 1:
            return self.limit - wall
        rest = self.limit - self.used
        if wall_guard.deadline_left() > 0 and wall < wall_guard.WALL_GUARD * self.limit + 1:
            return rest
        if rest > 0 and rest >= enough:
            wall_guard.note_cut()
        return 0.0


def default_workers() -> int:
    return usable_cores()


class _Recorder(cp_model.CpSolverSolutionCallback):
    """Keeps the best solution's values (CP-SAT's final response holds them too, but the callback
    is also the only place to report progress while the search runs)."""

    def __init__(self, cm: CpsatModel, progress: ProgressFn | None, floor: Fraction, t0: float,
                 stall_clock: Callable[[], float] = time.perf_counter, plans_only: bool = False) -> None:
        super().__init__()
        self.cm, self.progress, self.floor, self.t0 = cm, progress, floor, t0
        self.stall_clock = stall_clock
        self.changed: float | None = None
        """When the best solution or (unless ``plans_only``) the bound last moved, on ``stall_clock``;
        None until CP-SAT first reports either: a search still in presolve has not stalled (a 1,536-task
        V shape's hinted search, and then its proof search, were stopped as stalled before either had
        taken the hint, losing the bound the first solution brings)."""
        self.plans_only = plans_only
        self.best: float | None = None
        self.bound = 0.0
        """Scaled objective of the best solution and CP-SAT's bound, as last reported."""
        self.error: BaseException | None = None
        """What ``progress`` raised: it runs on CP-SAT's thread, so ``solve_model`` raises it again
        on the caller's once the search has stopped (a KeyboardInterrupt stops it as Ctrl-C does)."""

    def on_bound(self, bound: float) -> None:
        self.bound = bound
        if not self.plans_only or self.changed is None:
            self.changed = self.stall_clock()

    def stalled(self, seconds: float) -> bool:
        return self.changed is not None and self.stall_clock() - self.changed > seconds

    def reason(self, rule: EarlyStop) -> str | None:
        """Which of ``rule``'s triggers holds now, if any (the stall first)."""
        if rule.stall is not None and self.stalled(rule.stall):
            return "stalled"
        if rule.switch is None or self.best is None or time.perf_counter() - self.t0 <= rule.switch:
            return None
        bound = max(self.bound, float(self.floor * self.cm.scale))
        return "switched" if self.best > (1 + rule.switch_gap) * bound else None

    def on_solution_callback(self) -> None:
        now = time.perf_counter() - self.t0
        self.changed = self.stall_clock()
        self.best = self.objective_value
        if self.progress is not None and self.error is None:
            best = self.cm.to_time(int(self.objective_value))
            bound = max(self.floor, self.cm.to_time(int(self.best_objective_bound)))
            try:
                self.progress(Progress(best, min(bound, best), now))
            except BaseException as err:
                self.error = err
                self.stop_search()


def solve_model(
    cm: CpsatModel,
    *,
    time_limit: float,
    workers: int | None = None,
    seed: int = 0,
    progress: ProgressFn | None = None,
    floor: Fraction = Fraction(0),
    params: dict[str, object] | None = None,
    early: EarlyStop | None = None,
) -> CpsatResult:
    """Runs CP-SAT within ``set_limits``. Ctrl-C stops the search and the best solution so
    far comes back, as at a time limit, marked ``interrupted``. ``floor`` is a known lower
    bound (``cpsat_model.add_floor`` puts it in the model), so the search stops as soon as it is
    reached. ``early`` stops it on a wall-clock trigger, marked with the trigger's name in
    ``stopped``."""
    solver = cp_model.CpSolver()
    workers = workers or default_workers()
    prm = solver.parameters
    prm.random_seed = seed
    set_limits(solver, time_limit, workers)
    for key, value in search_params(cm.problem, cm.objective, workers, params, seconds=time_limit).items():
        set_param(prm, key, value)
    t0 = time.perf_counter()
    recorder = _Recorder(cm, progress, floor, t0, _stall_clock(early, workers),
                         plans_only=early is not None and early.plans_only)
    stop_when = None
    if early is not None:
        solver.best_bound_callback = recorder.on_bound
        stop_when = lambda: recorder.reason(early) is not None  # noqa: E731
    status, interrupted = run_interruptible(solver, cm.model, recorder, stop_when)
    if recorder.error is not None and not isinstance(recorder.error, KeyboardInterrupt):
        raise recorder.error
    interrupted = interrupted or recorder.error is not None
    wall = time.perf_counter() - t0
    result = _result(cm, solver, status, wall, interrupted)
    stopped = recorder.reason(early) if early is not None and not result.optimal else None
    return replace(result, stopped=stopped)


def _stall_clock(early: EarlyStop | None, workers: int) -> Callable[[], float]:
    """Wall seconds, or with ``early.stall_cpu`` the process's CPU seconds per thread that can run
    at once: on an idle machine both advance alike."""
    if early is None or not early.stall_cpu:
        return time.perf_counter
    threads = min(workers, usable_cores())
    return lambda: time.process_time() / threads


def _result(cm: CpsatModel, solver: cp_model.CpSolver, status: cp_model.CpSolverStatus, wall: float,
            interrupted: bool) -> CpsatResult:
    name, dtime = solver.status_name(status), solver.deterministic_time
    bound = cm.to_time(ceil_bound(solver.best_objective_bound))
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return CpsatResult(name, None, None, bound, wall, interrupted, deterministic_time=dtime)
    starts = {a: cm.to_time(solver.value(v)) for a, v in cm.starts.items()}
    objective = cm.to_time(int(solver.objective_value))
    return CpsatResult(name, starts, objective, min(bound, objective), wall, interrupted,
                       deterministic_time=dtime)


def ceil_bound(bound: float) -> int:
    """CP-SAT reports the bound as a float; objectives are integral, so its ceiling is proven too
    (with a tolerance for a float that is an integer minus rounding noise)."""
    return int(-(-bound // 1)) if abs(bound - round(bound)) > 1e-6 else round(bound)


def extract_orders(problem: Problem, starts: dict[Action, Fraction]) -> Orders:
    """Per-rank orders by start time. A zero-length task (W with tw = 0) at the start time of
    another goes first: its release then precedes that task's allocation, as the model counted."""
    per_rank: list[list[Action]] = [[] for _ in range(problem.p)]
    for a in starts:
        per_rank[problem.stage_rank[a.stage]].append(a)

    def key(a: Action) -> tuple:
        return (starts[a], problem.duration(a.kind, a.stage) > 0, a.stage, a.kind, a.mb)

    return tuple(tuple(sorted(order, key=key)) for order in per_rank)


def cpsat_run(
    incumbent: Plan,
    *,
    time_limit: float,
    workers: int | None = None,
    seed: int = 0,
    progress: ProgressFn | None = None,
    floor: Fraction = Fraction(0),
    params: dict[str, object] | None = None,
    early: EarlyStop | None = None,
    hint: bool = True,
) -> tuple[Plan, str | None]:
    """Build, hint with the incumbent, solve, extract: the CP-SAT plan (never worse than the
    incumbent, which is a solution of the model) with CP-SAT's proven bound and status, and
    which ``early`` trigger stopped the search, if one did (``solve_model``). Without ``hint`` the
    incumbent only sets the horizon (see ``proof_params``)."""
    problem, objective = incumbent.problem, incumbent.objective
    horizon = incumbent.makespan if objective == "makespan" else span_horizon(problem, incumbent.value)
    cm = build_model(problem, objective=objective, horizon=horizon)
    add_floor(cm, floor)
    if hint:
        add_hint(cm, canonical_starts(incumbent.timeline), incumbent.value)
    result = solve_model(cm, time_limit=time_limit, workers=workers, seed=seed, progress=progress,
                         floor=floor, params=params, early=early)
    if result.status in ("INFEASIBLE", "MODEL_INVALID"):  # the incumbent solves the model: a bug
        raise ScheduleError(f"internal error: CP-SAT found the model {result.status}, "
                            "yet the incumbent solves it")
    if result.starts is None:  # no time to load even the hint (or no hint): the incumbent stands
        bound = max(floor, result.bound)
        status = "optimal" if bound >= incumbent.value else "feasible"
        plan = replace(incumbent, status=status, lower_bound=bound)
    else:
        plan = Plan(problem=problem, orders=extract_orders(problem, result.starts), source="cp-sat",
                    status="optimal" if result.optimal else "feasible",
                    lower_bound=max(floor, result.bound), objective=objective)
        _check_replay(plan, result)
    if result.interrupted:
        raise Interrupted(plan)
    return plan, result.stopped


def _check_replay(plan: Plan, result: CpsatResult) -> None:
    """The replay starts every task no later than CP-SAT did, so it can only be as good or better,
    and equal at a proven optimum; anything else is a modelling bug, never a silent answer."""
    errors = plan.violations()
    if errors or plan.value > result.objective or (result.optimal and plan.value != result.objective):
        detail = errors[0] if errors else f"replay {plan.value} vs CP-SAT {result.objective}"
        raise ScheduleError(f"internal error: CP-SAT solution does not replay: {detail}")
