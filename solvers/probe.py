"""Horizon probes: lower bounds by refutation ("destructive" lower bounding).

A probe asks CP-SAT a yes/no question, "is there a schedule that ends by H?", on the full model
built with horizon H. With a tight horizon every start's window shrinks to [head, H - tail -
duration], and presolve and the cumulative's energy reasoning often refute it at once, where the
optimising search, whose horizon is the incumbent, moves its objective bound slowly or not at all.
A refuted H proves the bound H + one time unit; a probe that finds a schedule brings a better plan.

Probes refuted in 0.1-4.3 s horizons that 60 s searches had left open; near the optimum a probe
just times out, so the phase gets a share of the time (measurements: benchmarks/SOLVER_NOTES.md,
*Moved from docstrings*, ``probe`` module docstring).

Sound for any horizon: every schedule within the caps, relabelled into microbatch order and
started as early as its orders allow, meets the model's extras (``solvers.symmetry``; tested in
``test_cap_implied_constraints_hold_in_every_fitting_schedule``) and ends no later, so a schedule
that ends by H exists iff the model with horizon H has a solution.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, replace
from fractions import Fraction

from schedc.actions import Action
from schedc.errors import ScheduleError
from schedc.plan import Plan
from schedc.problem import Problem
from schedc.solvers.cpsat_model import build_model
from schedc.solvers.cpsat_solve import Clock, extract_orders, solve_model
from schedc.solvers.forked_race import can_fork, race
from schedc.solvers.progress import Interrupted, Progress, ProgressFn, report_or_stop

MIN_PROBE_SECONDS = 0.5
"""A probe shorter than this rarely gets past the model's presolve."""
PROBES = 2
"""Each probe may take the phase's time divided by this: refutations come fast or not at all (0.1 to 4 s in
the measurements above), and a probe that times out at the bound ends the phase."""


@dataclass(frozen=True)
class Answer:
    """What CP-SAT said about one horizon."""

    status: str
    """CP-SAT's status name; UNKNOWN too when the deadline cut the search off."""
    starts: dict[Action, Fraction] | None
    deterministic_time: float = 0.0
    interrupted: bool = False


def probe(plan: Plan, horizon: Fraction, *, time_limit: float, workers: int, seed: int,
          deadline: float | None = None) -> tuple[str, Plan | None, Answer]:
    """("refuted" | "found" | "unknown", the better plan found, CP-SAT's answer). ``horizon`` must
    be at least the analytic bound (so that every task's window is non-empty). With a ``deadline``
    (``time.perf_counter``) the probe ends by it, the model's build included; Ctrl-C ends it as the
    limit does, marked in ``answer.interrupted``."""
    args = (plan.problem, horizon, time_limit, workers, seed, deadline)
    answer = decide(*args) if deadline is None or workers < 2 or not can_fork() else _race(*args)
    if answer.status == "MODEL_INVALID":
        raise ScheduleError(f"internal error: CP-SAT found the probe at {horizon} an invalid model")
    if answer.status == "INFEASIBLE":
        return "refuted", None, answer
    if answer.starts is None:
        return "unknown", None, answer
    found = Plan(problem=plan.problem, orders=extract_orders(plan.problem, answer.starts),
                 source="cp-sat probe", status="feasible", objective="makespan")
    if found.violations() or found.value > horizon:  # the replay never ends later than CP-SAT's starts
        raise ScheduleError(f"internal error: a probe's schedule does not replay within {horizon}")
    return "found", found, answer


def decide(problem: Problem, horizon: Fraction, time_limit: float, workers: int, seed: int,
           deadline: float | None, presolve: bool | None = None) -> Answer:
    """Whether a schedule ends by ``horizon``: the full model built with that horizon and no
    objective, so CP-SAT's first propagation can refute a tight horizon its optimising search
    never rules out (module doc); UNKNOWN once ``deadline`` leaves too little time. ``presolve``:
    CP-SAT's presolve on or off (None: the model's default, ``cpsat_params.default_params``)."""
    cm = build_model(problem, objective="makespan", horizon=horizon)
    cm.model.clear_objective()  # a decision question: any schedule that ends by the horizon
    if deadline is not None:
        time_limit = min(time_limit, deadline - time.perf_counter())
        if time_limit < MIN_PROBE_SECONDS:
            return Answer("UNKNOWN", None)
    result = solve_model(cm, time_limit=time_limit, workers=workers, seed=seed,
                         params=None if presolve is None else {"cp_model_presolve": presolve})
    return Answer(result.status, result.starts, result.deterministic_time, result.interrupted)


def _race(problem: Problem, horizon: Fraction, time_limit: float, workers: int, seed: int,
          deadline: float) -> Answer:
    """``decide`` with and without CP-SAT's presolve, half the workers each, in forked processes
    (``forked_race``): the first decisive answer wins, and both are killed at the deadline (a child
    with one worker counts its limit in CP-SAT's deterministic time, ``cpsat_params.set_limits``;
    the kill bounds its wall time).

    - Processes: CP-SAT checks its limit only between steps (one load ran 9 s past a 5 s limit).
    - Both: each refutes what the other cannot (with presolve / without: 0.17 / 23.9 s, 3.0 / 0.64 s).
      Both named: with one stage per rank the model's default is no presolve, and an arm left to the
      default ran the same search as the other (p=16 m=32 v=1 unsplit, cap 8, comm 1/2, per-stage costs,
      at 378 to 378.75, one worker each: presolve refuted in 1.5-2.1 deterministic s, the default in
      1.9-4.0).
    (measurements: benchmarks/SOLVER_NOTES.md, *Moved from docstrings*, ``probe._race``)
    """
    half = max(1, workers // 2)
    calls = [(problem, horizon, time_limit, half, seed, deadline, presolve) for presolve in (True, False)]
    return race(decide, calls, deadline, _decisive, Answer("UNKNOWN", None), "probe")


def _decisive(answer: Answer) -> bool:
    """Refuted, a schedule found, or the model invalid (``probe`` reports that as an internal
    error). A child is never interrupted: Ctrl-C is the parent's (``forked_race._child``)."""
    return answer.status in ("INFEASIBLE", "MODEL_INVALID") or answer.starts is not None


def probe_bound(plan: Plan, floor: Fraction, *, time_limit: float, workers: int, seed: int = 0,
                progress: ProgressFn | None = None) -> Plan:
    """The plan (or a better one a probe found) with its bound raised by probes. Galloping from the
    bound up: each refuted horizon doubles the next step, a probe that does not finish halves it
    back towards the last refuted one; it stops when the bound meets the plan, when a step would be
    below one time unit, or when the time is spent (deterministic time with one worker, as every
    budget: ``cpsat_solve.Clock``). Ctrl-C raises Interrupted with the best plan and bound so far."""
    if plan.objective != "makespan":
        raise ValueError("horizon probes bound the makespan; this plan minimises the largest span")
    unit = Fraction(1, plan.problem.time_scale)
    clock, t0 = Clock(time_limit, workers), time.perf_counter()
    deadline = None if workers == 1 else t0 + time_limit
    lo, step, best = _round_up(max(floor, plan.lower_bound or floor), unit), unit, plan
    while lo < best.value and step >= unit and clock.left(enough=MIN_PROBE_SECONDS) >= MIN_PROBE_SECONDS:
        horizon = min(lo + step - unit, best.value - unit)
        limit = min(max(MIN_PROBE_SECONDS, time_limit / PROBES), clock.left())
        try:
            outcome, found, answer = probe(best, horizon, time_limit=limit, workers=workers, seed=seed,
                                           deadline=None if deadline is None else
                                           min(deadline, time.perf_counter() + limit))
        except KeyboardInterrupt:  # while building or replaying: what the earlier probes found stands
            raise Interrupted(_bounded(best, lo)) from None
        clock.spend(answer.deterministic_time)
        if outcome == "refuted":
            lo, step = horizon + unit, step * 2
        elif outcome == "found":
            best = found
        else:
            step = _halve(step, unit)
        if progress is not None and outcome != "unknown":
            report_or_stop(progress, Progress(best.value, min(lo, best.value), time.perf_counter() - t0,
                                              "cp-sat probe"), _bounded(best, lo), min(lo, best.value))
        if answer.interrupted:
            raise Interrupted(_bounded(best, lo))
    return _bounded(best, lo)


def _round_up(bound: Fraction, unit: Fraction) -> Fraction:
    """Every schedule can start each task as early as its order allows without ending later, and
    then every start and end is a multiple of the time unit: so is the optimum."""
    return unit * math.ceil(bound / unit)


def _bounded(plan: Plan, bound: Fraction) -> Plan:
    bound = min(bound, plan.value)
    return replace(plan, lower_bound=bound, status="optimal" if bound == plan.value else "feasible")


def _halve(step: Fraction, unit: Fraction) -> Fraction:
    """Half the step in whole time units; below one unit (the end) once the step is one unit."""
    return unit * (step // unit // 2) if step > unit else step / 2
