"""The public solver interface: problem -> plan with status and bounds, whatever the backend.

``solve`` checks the caps (an infeasible cap is an InfeasibleError naming the smallest feasible
one, before any search), takes the best quick plan as the incumbent (``incumbent.py``; a quarter of
the time at most) and shares the rest among these phases, in the order they run (``_shares``):

1. ``first``, ahead of the search: for a capped makespan at v >= 2 with the cp-sat backend, the
   strongest rank's relaxation (``RELAX_FIRST_SHARE``; its bound enters the model as a floor); for
   spans, rank 0's least end (``first_rank_end.py``, up to 30%). The search gets what it leaves.
2. ``search``: the backend (``backends.py``) improves the incumbent; it stops at the floor.
3. ``spans``: for spans, a relaxation whose solutions are plans in any order (``span_bound.py``; 20%,
   or with several workers all the search left): the backends' span bounds hold for plans in
   microbatch index order only, so the reported bound is this, rank 0's end or the analytic one.
4. ``chain``: the chained-entries bound on long capped runs at v = 1 (``CHAIN_SHARE``, ``_chained``).
5. ``relax``: the rank relaxations of a capped makespan (``relaxation.py``, 10%); where the strongest
   rank ran ahead, the block of the three strongest ranks first (``relaxation.block_bound``, with
   several workers the probes' share too, where each rank's relaxation covers all its microbatches
   and 8 s are left), then the ranks outside it (``bound_phases`` runs these).
6. ``probes``: horizon probes of the makespan (``probe.py``, 10%, only where that share is at least
   ``PROBE_MIN_SECONDS``, so not in a default 10 s run); they may also find a better plan.

Phases 3 to 6 run only while the plan has a gap. None of 1 and 3 to 6 runs with the list backend,
nor with one worker above ``ONE_WORKER_BOUNDS_MAX_TASKS`` tasks; a makespan model small enough
(``backends.WHOLE_SEARCH_MAX_TASKS``) keeps phases 4 to 6's time for its search. The plan is
reported with the largest bound proven. Backends follow the small ``Solver`` protocol, so the list
heuristic, CP-SAT, large-neighbourhood search and a future MILP sit side by side in ``BACKENDS``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from fractions import Fraction

from schedc.errors import ProblemError, ScheduleError, shown
from schedc.plan import OBJECTIVES, Plan
from schedc.problem import Problem
from schedc.solvers.arguments import check_arguments
from schedc.solvers.backends import BACKENDS, CPSAT_MAX_TASKS, Budget, pick_backend, whole_search
from schedc.solvers.bound_phases import block_applies, block_floor, chain_floor, relax_ahead, relaxation_floor
from schedc.solvers.bounds import objective_bound as analytic_bound
from schedc.solvers.incumbent import best_incumbent
from schedc.solvers.list_scheduler import SECONDS_PER_TASK
from schedc.solvers.progress import Interrupted, Progress, ProgressFn, Reporter, bounds_capped
from schedc.solvers.wall_guard import call_deadline

DEFAULT_TIME_LIMIT = 10.0
MIN_SEARCH_SECONDS = 0.05
"""What any search gets at least: a limit of zero or less (the time left after the list phase, or
a whole search's after the final checks' reserve, on a short limit) made CP-SAT refuse its model
as invalid, an internal error."""
PROBE_SHARE = 0.1
"""Share of the time kept for horizon probes (``probe.py``) when the searches end with a gap."""
PROBE_MIN_SECONDS = 1.0
"""A smaller share is not kept (a probe needs its model built and presolved): so the default 10 s
run has no probe phase."""
RELAXATION_SHARE = 0.1
"""Share of the time kept for the rank-relaxation bound when a capped search ends with a gap."""
RELAX_FIRST_SHARE = 0.3
"""Most of the time the strongest rank's relaxation (``relaxation.rank_strength_order``) may take before
a capped makespan search by the cp-sat backend at v >= 2 (``_relax_first``): run first it finishes, and
its bound floors the model. A third: rank 0 of the headline with ``--v 2`` needs about 15 s of 60.
(measurements: benchmarks/SOLVER_NOTES.md, *Moved from docstrings*, ``portfolio.RELAX_FIRST_SHARE``)"""
SPAN_BOUND_SHARE = 0.2
"""Share of the time kept for the span bound that holds for every plan (``span_bound.py``): spans
have no probes or rank relaxation, and the backends' bounds do not count for them. With several
workers the phase takes all the time the search left (its solutions are plans in any order, which
the search's are not): on 60 random small problems at 2 s, 3 ended with a gap, 5 with the share alone."""
LIST_SECONDS_PER_TASK = SECONDS_PER_TASK
"""About what the list scheduler takes per task and run, to turn a one-worker solve's list share (a
quarter of its time) into a task budget, which does not depend on the clock."""
ONE_WORKER_BOUNDS_MAX_TASKS = CPSAT_MAX_TASKS
"""With one worker, budgets count CP-SAT's deterministic time only, and above this many tasks the
bound phases spend far more outside it: building one probe's model of p=32 m=128 v=2 (24,576 tasks)
takes 3.5 s, and the rank relaxation given 1 s took 4.5 s. So a one-worker solve of a larger problem
skips them (a 10 s limit ran for 27 s), and its bound is the search's and the analytic one."""
SEARCH_SETUP_SECONDS_PER_TASK = 1e-5
"""About what a search spends per task before it can improve anything (window LNS indexes the
incumbent: about 0.8 s on p=100 m=334 v=2, which has 200,400 tasks, not the 66,800 this figure was
set from, so it is about 2.5 times that measurement's 4 µs a task). Where the list phase left less time than
that (wall clock; one worker counts deterministic time and always searches), the search is skipped:
it could only run past the limit, by a second there (`--time-limit 2` ended after 5.1-5.3 s wall,
3.9-4.0 s without it, one other process busy beside)."""
CHAIN_SHARE = 0.25
"""Share of the time kept for the chained-entries bound (``chain_bound.py``) where it applies
(``CHAIN_WHOLE_MODEL_RUN``): long capped runs, one stage per rank, whose plans are usually optimal, so
the bound is what the gap lacks (10 s solves: gaps of 4.5-8.1% cut to 2.0-5.6%).
(measurements: benchmarks/SOLVER_NOTES.md, *Moved from docstrings*, ``portfolio.CHAIN_SHARE``)"""
CHAIN_WHOLE_MODEL_RUN = 16
"""Where CP-SAT searches the whole model (the cp-sat backend), the chain runs from 16p microbatches on:
below, the model's own bound is the better one, and the chain's quarter of the time can cost it its
proof. Under window LNS, which proves nothing, from ``chain_bound.CHAIN_MIN_MICROBATCHES_PER_RANK``.
(measurements: benchmarks/SOLVER_NOTES.md, *Moved from docstrings*, ``portfolio.CHAIN_WHOLE_MODEL_RUN``)"""


def solve(
    problem: Problem,
    *,
    time_limit: float = DEFAULT_TIME_LIMIT,
    workers: int | None = None,
    seed: int = 0,
    objective: str = "makespan",
    progress: ProgressFn | None = None,
    backend: str = "auto",
) -> Plan:
    """The best plan found within ``time_limit`` seconds (the whole call, heuristics included).
    Ctrl-C returns the best plan found so far, as the time limit does. With one worker every
    budget is deterministic time (see ``cpsat_params.set_limits``: about seconds on an idle core)
    and the heuristics run to a task budget, not the clock, so the same seed gives the same plan
    while a core keeps a third of its speed; on a loaded machine the call then runs over the limit,
    up to about ``wall_guard.WALL_GUARD`` times it plus a second (the searches' wall-clock cap, which
    cuts them, and their repeatability, short), and the heuristics' overrun."""
    time_limit, workers = check_arguments(problem, time_limit, workers, seed, progress)
    seed = int(seed)
    if not isinstance(objective, str) or objective not in OBJECTIVES:
        raise ProblemError(f"objective must be one of {', '.join(OBJECTIVES)}, got {shown(objective)}")
    name = pick_backend(problem) if isinstance(backend, str) and backend == "auto" else backend
    if not isinstance(name, str) or name not in BACKENDS:
        raise ProblemError(f"unknown solver backend {shown(backend)}; "
                           f"choose from auto, {', '.join(BACKENDS)}")
    _check_caps(problem)
    if name != "list":
        from schedc.solvers.cpsat_model import check_integer_model

        check_integer_model(problem)
    t0 = time.perf_counter()
    progress = None if progress is None else Reporter(progress, t0)
    repeatable = workers == 1  # see cpsat_params.set_limits: budgets must not depend on the wall clock
    incumbent, floor, interrupted = _quick_start(problem, objective, repeatable, time_limit / 4)
    if progress is not None:
        interrupted |= not _told(progress, Progress(incumbent.value, min(floor, incumbent.value),
                                                    time.perf_counter() - t0, incumbent.source))
    plan = incumbent
    if incumbent.value > floor and not interrupted:
        call = Budget(time_limit, workers, seed, progress, floor)
        plan, floor = _search(incumbent, name, objective, call, t0)
    try:
        plan = _finish(plan, incumbent, floor, time.perf_counter() - t0)
    except KeyboardInterrupt:  # Ctrl-C while the answer is checked: the answer is what it asks for
        plan = _finish(plan, incumbent, floor, time.perf_counter() - t0)
    if progress is not None:
        _told(progress.final, plan.value, plan.lower_bound)
    return plan


def _search(incumbent: Plan, name: str, objective: str, call: Budget, t0: float) -> tuple[Plan, Fraction]:
    """The backend, then the bound phases, each in its share of the call's time: the best plan
    and the best floor, also where Ctrl-C cut a phase short. With one worker the searches share one
    wall-clock guard (``wall_guard``), counted from here: the list phase before is charged by
    estimate, and counting its overrun would cut the searches of large problems on an idle machine."""
    problem, time_limit, floor = incumbent.problem, call.time_limit, call.floor
    workers, seed, progress = call.workers, call.seed, call.progress
    repeatable = workers == 1
    left = time_limit - _list_charge(problem, time_limit / 4) if repeatable else \
        max(MIN_SEARCH_SECONDS, time_limit - (time.perf_counter() - t0))
    if not repeatable and left < SEARCH_SETUP_SECONDS_PER_TASK * problem.num_tasks:
        return incumbent, floor
    share = _shares(problem, name, objective, workers, left)
    first, search, spans, chain, relax, probes = (share.first, share.search, share.spans, share.chain,
                                                  share.relax, share.probes)
    plan = incumbent
    try:
        with call_deadline(left, time.perf_counter()):
            if first and objective == "span":
                from schedc.solvers.span_bound import first_rank_floor

                plan, floor, unused = first_rank_floor(plan, floor, first, workers, seed, progress, t0)
                if floor >= plan.value:
                    return plan, floor
                search = max(MIN_SEARCH_SECONDS, search + unused)
            elif first:
                floor, unused = relax_ahead(incumbent, floor, first, workers, progress, t0)
                if floor >= incumbent.value:
                    return incumbent, floor
                search = max(MIN_SEARCH_SECONDS, search + unused)
            reports = bounds_capped(progress, objective, floor)
            plan = BACKENDS[name](plan, Budget(search, workers, seed, reports, floor))
            if spans and plan.value > floor:  # the time left: its solutions are plans too (span_bound)
                from schedc.solvers.span_bound import span_floor

                rest = spans if repeatable else _time_left(problem, time_limit, t0)
                plan, floor = span_floor(plan, floor, rest, workers, seed, progress, t0)
            if chain and plan.status != "optimal" and plan.value > floor:
                rest = chain if repeatable else _time_left(problem, time_limit, t0) - relax - probes
                floor = chain_floor(plan, floor, rest, workers, seed, progress, t0)
            if relax and plan.status != "optimal" and plan.value > floor:
                floor = _relaxations_after(plan, floor, bool(first), relax, probes, call, t0)
            if probes and plan.status != "optimal" and plan.value > floor:
                rest = probes if repeatable else _time_left(problem, time_limit, t0)
                plan = _probe(plan, Budget(rest, workers, seed, progress, floor))
    except Interrupted as stop:  # Ctrl-C inside a phase: its best plan and bound, nothing more
        plan = stop.plan or plan
        floor = floor if stop.floor is None else max(floor, stop.floor)
    except KeyboardInterrupt:
        pass  # ``plan`` is the best found so far: the incumbent, or the search's answer
    return plan, floor


@dataclass(frozen=True)
class Shares:
    """Seconds of a solve's time for each phase, in the order they run (0: skipped)."""

    first: float
    """The bound ahead of the search: the strongest rank's relaxation, or for spans rank 0's end."""
    search: float
    spans: float
    """The span relaxation."""
    chain: float
    """The chained entries."""
    relax: float
    """The rank relaxations after the search."""
    probes: float
    """The horizon probes."""


def _shares(problem: Problem, name: str, objective: str, workers: int, left: float) -> Shares:
    """How the ``left`` seconds are shared among the phases."""
    relax = RELAXATION_SHARE * left if name != "list" and _relaxable(problem, objective) else 0.0
    probes = PROBE_SHARE * left if name != "list" and objective == "makespan" else 0.0
    probes = probes if probes >= PROBE_MIN_SECONDS else 0.0
    spans = SPAN_BOUND_SHARE * left if name != "list" and objective == "span" else 0.0
    first = RELAX_FIRST_SHARE * left if _relax_first(problem, name, objective) else 0.0
    chain = CHAIN_SHARE * left if objective == "makespan" and _chained(problem, name) else 0.0
    if spans:
        from schedc.solvers.span_bound import FIRST_RANK_MAX_TASKS, FIRST_RANK_MIN_SECONDS, FIRST_RANK_SHARE

        first = FIRST_RANK_SHARE * left if problem.num_tasks <= FIRST_RANK_MAX_TASKS else 0.0
        first = first if first >= FIRST_RANK_MIN_SECONDS else 0.0
    if workers == 1 and problem.num_tasks > ONE_WORKER_BOUNDS_MAX_TASKS:
        relax = probes = spans = first = chain = 0.0
    whole = name == "cp-sat" and whole_search(problem, objective, workers)  # the search is the last phase
    if whole or (first and problem.p == 1):  # p = 1: the one rank was relaxed first
        relax = 0.0
    if whole:
        probes = chain = 0.0
    # the last phase keeps the final checks' time (the bound phases' own deadlines do so after it)
    # a whole search keeps at least MIN_SEARCH_SECONDS, as any search: left less the reserve can be negative
    rest = left - relax - probes - spans - chain
    search = (max(MIN_SEARCH_SECONDS, left - _finish_reserve(problem)) if whole else rest) - first
    return Shares(first, search, spans, chain, relax, probes)


def _told(report: Callable[..., None], *args: object) -> bool:
    """Calls a progress report; False when Ctrl-C came during it (a print to a slow terminal), which
    then stops the search, as anywhere else, instead of losing the plan."""
    try:
        report(*args)
    except KeyboardInterrupt:
        return False
    return True


def _quick_start(problem: Problem, objective: str, repeatable: bool, list_share: float
                 ) -> tuple[Plan, Fraction, bool]:
    """The incumbent, the analytic floor, and whether Ctrl-C came meanwhile: then the best plan of
    the runs so far, and its floor unless a Ctrl-C came during the floor too (then 0, a valid bound
    of any plan). An interrupt before any plan exists stays a KeyboardInterrupt."""
    budgets = dict(task_budget=int(list_share / LIST_SECONDS_PER_TASK)) if repeatable else \
        dict(time_budget=list_share)
    interrupted = False
    try:
        incumbent = best_incumbent(problem, objective, **budgets)
    except Interrupted as stop:
        incumbent, interrupted = stop.plan, True
    try:
        return incumbent, analytic_bound(problem, objective), interrupted
    except KeyboardInterrupt:
        return incumbent, Fraction(0), True


def _list_charge(problem: Problem, share: float) -> float:
    """What the list phase of a one-worker solve costs, in seconds estimated from its task budget."""
    from schedc.solvers.list_portfolio import variants

    return min(share, len(variants(problem)) * problem.num_tasks * LIST_SECONDS_PER_TASK)


def _finish_reserve(problem: Problem) -> float:
    """Seconds kept for the final plan checks (each rebuilt Plan replays its orders)."""
    return 0.05 + 1e-5 * problem.num_tasks


def _time_left(problem: Problem, time_limit: float, t0: float) -> float:
    return time_limit - (time.perf_counter() - t0) - _finish_reserve(problem)


def _relaxable(problem: Problem, objective: str) -> bool:
    """The rank relaxation bounds the makespan under a cap."""
    return objective == "makespan" and any(c is not None for c in problem.binding_caps)


def _chained(problem: Problem, name: str) -> bool:
    """Whether the chained-entries bound runs (``chain_bound.chain_applies``, ``CHAIN_WHOLE_MODEL_RUN``)."""
    from schedc.solvers.chain_bound import chain_applies

    long_run = name == "lns" or (name == "cp-sat" and problem.m >= CHAIN_WHOLE_MODEL_RUN * problem.p)
    return long_run and chain_applies(problem)


def _relax_first(problem: Problem, name: str, objective: str) -> bool:
    """Whether the strongest rank's relaxation runs before the search (``RELAX_FIRST_SHARE``): not
    with one stage per rank, where CP-SAT's own model bounds as well and the phase only cost time
    (the grid's 46 capped v = 1 instances: the same answers, 75.6 s in all against 66.2 s).
    (measurements: benchmarks/SOLVER_NOTES.md, *Moved from docstrings*, ``portfolio._relax_first``)"""
    return name == "cp-sat" and problem.v > 1 and _relaxable(problem, objective)


def _relaxations_after(plan: Plan, floor: Fraction, ahead: bool, relax: float, probes: float, call: Budget,
                       t0: float) -> Fraction:
    """The rank relaxations after the search, and the floor they prove. Where the
    strongest rank was relaxed ahead of the search and the block of the strongest ranks applies
    (``bound_phases.block_applies``: enough time, each rank relaxed whole), the block goes first,
    then the ranks outside it with what it left; otherwise the ranks not relaxed ahead, in the
    relaxations' share. With several workers the block may take the probes' share too (all the
    time left: three ranks take longer than one, ``relaxation.BLOCK_RANKS``), and the probes get
    what it leaves; with one worker each keeps its own deterministic share, so a probe still runs
    (at 30 s a block in the probes' share too left p=8 m=16 v=2 vshape cap 2, tb=2, comm 1/2 at
    197.5 where the probes and single ranks had reached 203)."""
    problem, workers, progress = plan.problem, call.workers, call.progress
    repeatable = workers == 1
    share = relax if repeatable else _time_left(problem, call.time_limit, t0)
    if not (ahead and block_applies(problem, share)):
        rest = share if repeatable else share - probes
        which = slice(1, None) if ahead else slice(None)
        return relaxation_floor(plan, floor, rest, workers, progress, t0, which=which)
    from schedc.solvers.relaxation import BLOCK_RANKS

    floor, left = block_floor(plan, floor, share, workers, progress, t0)
    if plan.value > floor:
        rest = left if repeatable else _time_left(problem, call.time_limit, t0)
        floor = relaxation_floor(plan, floor, rest, workers, progress, t0, which=slice(BLOCK_RANKS, None))
    return floor


def _finish(plan: Plan, incumbent: Plan, floor: Fraction, seconds: float) -> Plan:
    """The better of backend answer and incumbent, with the best bound and the matching status (for
    spans the floor alone: a backend's span bound holds for plans in index order only)."""
    claimed = plan.lower_bound if plan.objective == "makespan" else None
    if incumbent.value < plan.value:
        plan = incumbent
    bound = max(floor, claimed or floor)
    if bound > plan.value:
        raise ScheduleError(f"internal error: lower bound {bound} exceeds {plan.value}, a valid plan's value")
    if plan.value == bound:
        status = "optimal"
    else:
        status = "heuristic" if plan.source == incumbent.source and plan.status == "heuristic" else "feasible"
    return replace(plan, lower_bound=bound, status=status, solve_seconds=seconds)


def _probe(plan: Plan, budget: Budget) -> Plan:
    """Horizon probes (solvers.probe) on a plan the searches left with a gap."""
    from schedc.solvers.probe import probe_bound

    return probe_bound(plan, budget.floor, time_limit=budget.time_limit, workers=budget.workers,
                       seed=budget.seed, progress=budget.progress)


def _check_caps(problem: Problem) -> None:
    """A cap below one microbatch's activations on a rank admits no schedule (solvers.feasibility)."""
    from schedc.solvers.feasibility import check_caps

    check_caps(problem)
