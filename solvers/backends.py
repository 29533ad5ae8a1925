"""The backends behind ``solve``: each improves a valid incumbent within a budget.

``Solver`` is the protocol: the list heuristic (the incumbent as it is), one CP-SAT model of the
whole problem (with the triggers that hand a stalled or slow search to a proof search or to window
LNS) and window LNS alone sit side by side in ``BACKENDS``, where a future MILP would join them.
``portfolio.solve`` picks one, gives it most of the time, and runs the bound phases before and
after it (the list in ``portfolio``'s docstring).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import TYPE_CHECKING, Protocol

from schedc.dag import unfused_orders
from schedc.plan import Plan
from schedc.problem import Problem
from schedc.solvers.progress import Interrupted, Progress, ProgressFn, report_or_stop

if TYPE_CHECKING:
    from schedc.solvers.cpsat_solve import EarlyStop

CPSAT_MAX_TASKS = 2500
"""Above this many tasks ``auto`` searches by LNS around the incumbent instead of one CP-SAT model."""
STALL_SHARE: float | None = 0.3
"""CP-SAT without progress (a better plan; outside ``HINTED_LB_SEARCH`` also a better bound) for
this share of its time hands the rest to a proof search (``CpsatSolver``); None: never. With it
p8-m32-v2V-unsplit-c0-mem3_2-uneq was proven optimal (543), as in no run without it (bound 529).
(measurements: benchmarks/SOLVER_NOTES.md, *Moved from docstrings*, ``backends.STALL_SHARE``)"""
STALL_PROOF_MAX_GAP: float | None = 0.05
"""A stall with a larger gap (as printed: (value - bound) / value) does not leave the rest to the
proof search (None: always the proof search), which closes gaps of a few percent; above that the plan
is the likelier side to be off, and window LNS (after ``EXPLORE``) the better plan finder.
(measurements: benchmarks/SOLVER_NOTES.md, *Moved from docstrings*, ``backends.STALL_PROOF_MAX_GAP``)"""
SWITCH_SHARE: float | None = 0.75
"""CP-SAT still finding plans after this share of its time, with a gap above SWITCH_GAP, hands the
rest to window LNS around its best plan (``lns.py``), the faster finder on large instances; None: never.
Not sooner: the full model is the better searcher early on (a switch at half time lost two proofs).
(measurements: benchmarks/SOLVER_NOTES.md, *Moved from docstrings*, ``backends.SWITCH_SHARE``)"""
SWITCH_GAP = 0.01
"""The issue's target gap: closer than this, CP-SAT keeps its search (and its bound) to the end."""
EXPLORE = True
"""Before window LNS takes a stalled search (a gap above STALL_PROOF_MAX_GAP), the unhinted search
(``_prove``'s) runs while it finds better plans (``EarlyStop.plans_only``); False: LNS at once. A stalled
hinted search and LNS are stuck in the incumbent's neighbourhood; it is not. A switched search skips it.
(measurements: benchmarks/SOLVER_NOTES.md, *Moved from docstrings*, ``backends.EXPLORE``)"""
HINTED_LB_SEARCH = True
"""On presolved makespan models (several stages per rank), with the triggers, the hinted search's
full-problem worker is CP-SAT's lower-bound search (``cpsat_params.proof_params``), which finds plans at
its bound where that is the optimum; its bound creeps, so its stall counts plans (``EarlyStop.plans_only``).
(measurements: benchmarks/SOLVER_NOTES.md, *Moved from docstrings*, ``backends.HINTED_LB_SEARCH``)"""
PROOF_MIN_SECONDS = 1.0
WHOLE_SEARCH_MAX_TASKS = 400
"""Makespan models of at most this many tasks, solved by the cp-sat backend with several workers, give
CP-SAT's hinted search all the time after the list phase and ``portfolio.RELAX_FIRST_SHARE``: no trigger,
no bound phase after it: there the full model, given time, finds and proves best (at 768 tasks, bounds fell).
(measurements: benchmarks/SOLVER_NOTES.md, *Moved from docstrings*, ``backends.WHOLE_SEARCH_MAX_TASKS``)"""


def whole_search(problem: Problem, objective: str, workers: int) -> bool:
    """Whether CP-SAT's search gets the whole budget (``WHOLE_SEARCH_MAX_TASKS``)."""
    return objective == "makespan" and workers > 1 and problem.num_tasks <= WHOLE_SEARCH_MAX_TASKS


@dataclass(frozen=True)
class Budget:
    """What a backend may spend, and where to report improvements."""

    time_limit: float
    workers: int
    seed: int
    progress: ProgressFn | None
    floor: Fraction
    """A proven lower bound on the objective: a backend may stop when it reaches it."""


class Solver(Protocol):
    """A backend: improves on a valid incumbent within a budget. It returns a plan at least as good
    as the incumbent, whose ``lower_bound`` is what it proved (or the floor) and whose ``status``
    says whether that bound is reached. An incumbent that runs some backwards whole (B's in a split
    plan, as torch's DualPipeV) is first stated with I and W instead (``unfused``)."""

    name: str

    def __call__(self, incumbent: Plan, budget: Budget) -> Plan: ...


class ListSolver:
    """The heuristic alone: the incumbent is its answer."""

    name = "list"

    def __call__(self, incumbent: Plan, budget: Budget) -> Plan:
        return replace(unfused(incumbent), lower_bound=budget.floor)


class CpsatSolver:
    """One CP-SAT model of the whole problem, warm-started from the incumbent. Two wall-clock
    triggers hand the rest of the time to another search:

    - a stall (no better plan, and outside ``HINTED_LB_SEARCH`` no better bound, for STALL_SHARE of
      its time, counted from CP-SAT's first report): a proof search on the same model without the
      hint (``cpsat_params.proof_params``), which the hint no longer ties to the plan's
      neighbourhood, the better prover; with a gap above STALL_PROOF_MAX_GAP, the unhinted search
      until it stalls (``EXPLORE``), then window LNS;
    - still finding plans at SWITCH_SHARE of its time, with a gap above SWITCH_GAP: window LNS
      around its best plan, which finds plans faster than the full model on large instances.

    On presolving makespan models the hinted search's full-problem worker is the lower-bound
    search too (``HINTED_LB_SEARCH``).

    Not with one worker: a wall-clock trigger would break the same-seed-same-plan promise; nor on a
    small makespan model (``whole_search``), where the one search keeps the whole budget."""

    name = "cp-sat"

    def __call__(self, incumbent: Plan, budget: Budget) -> Plan:
        from schedc.solvers.cpsat_params import proof_params
        from schedc.solvers.cpsat_solve import cpsat_run

        t0 = time.perf_counter()
        early = _early_stop(budget, incumbent.problem, incumbent.objective)
        lb_search = early is not None and _lb_search(incumbent.problem, incumbent.objective)
        params = proof_params(budget.workers) if lb_search else None
        plan, stopped = cpsat_run(unfused(incumbent), time_limit=budget.time_limit, workers=budget.workers,
                                  seed=budget.seed, progress=budget.progress, floor=budget.floor,
                                  params=params, early=early)
        left = budget.time_limit - (time.perf_counter() - t0)
        if stopped is None or left < PROOF_MIN_SECONDS:
            return plan
        with _stops_with(plan):
            return _hand_off(plan, stopped, replace(budget, time_limit=left))


def _hand_off(plan: Plan, stopped: str, rest: Budget) -> Plan:
    """The rest of the time after a search stopped by a trigger (``CpsatSolver``)."""
    if plan.objective == "span":  # its bound holds in index order only (span_bound.py): no proof
        return _improve(plan, rest)
    rest = replace(rest, floor=max(rest.floor, plan.lower_bound))
    provable = STALL_PROOF_MAX_GAP is None or plan.value - rest.floor <= STALL_PROOF_MAX_GAP * plan.value
    if stopped == "stalled" and provable:
        return _prove(plan, rest)
    return _explore(plan, rest) if stopped == "stalled" and EXPLORE else _improve(plan, rest)


@contextlib.contextmanager
def _stops_with(plan: Plan) -> Iterator[None]:
    """A Ctrl-C between two searches (the next one builds its model: seconds at scale) stops with
    ``plan``, the last search's answer, which a bare KeyboardInterrupt lost for the incumbent the
    solve started from; one inside a search carries that search's own (``Interrupted``)."""
    try:
        yield
    except Interrupted:
        raise
    except KeyboardInterrupt:
        raise Interrupted(plan) from None


def _early_stop(budget: Budget, problem: Problem, objective: str) -> EarlyStop | None:
    """CpsatSolver's triggers in seconds of its budget; None with one worker, or for a small model
    (``whole_search``).

    Without presolve (one stage per rank, ``cpsat_params.default_params``) every worker searches
    from the start, so on an idle machine the process's CPU time per worker runs as fast as the
    wall clock, and the stall counts that: on a loaded machine the hinted search keeps the CPU time
    it proves in when idle. In wall seconds, the headline (proven in 1.4 s idle) stalled under
    load before its proof and the unhinted proof search, starting over, ended at the 10 s limit
    with a gap of 8%. With presolve the CPU time is not a clock: presolve runs on one thread, so the
    stall would fire later than on an idle machine (benchmarks/SOLVER_NOTES.md). Where the hinted
    search is the lower-bound search (``_lb_search``), only a better plan counts against the stall."""
    from schedc.solvers.cpsat_solve import EarlyStop

    if budget.workers == 1 or whole_search(problem, objective, budget.workers):
        return None
    share = lambda s: None if s is None else s * budget.time_limit  # noqa: E731
    return EarlyStop(stall=share(STALL_SHARE), stall_cpu=not _presolves(problem), switch=share(SWITCH_SHARE),
                     switch_gap=SWITCH_GAP, plans_only=_lb_search(problem, objective))


def _lb_search(problem: Problem, objective: str) -> bool:
    """Whether the hinted search runs the objective lower-bound search (``HINTED_LB_SEARCH``)."""
    return HINTED_LB_SEARCH and objective == "makespan" and _presolves(problem)


def _presolves(problem: Problem) -> bool:
    """Whether CP-SAT presolves this problem's model (``cpsat_params.default_params``)."""
    from schedc.solvers.cpsat_params import default_params

    return default_params(problem).get("cp_model_presolve", True)


def _explore(plan: Plan, budget: Budget) -> Plan:
    """The unhinted search (``EXPLORE``) until it stalls, then window LNS for the rest of the time,
    unless the search proved its plan optimal or left less than PROOF_MIN_SECONDS."""
    from schedc.solvers.cpsat_solve import EarlyStop

    t0 = time.perf_counter()
    stall = None if STALL_SHARE is None else STALL_SHARE * budget.time_limit
    presolves = _presolves(plan.problem)
    early = None if stall is None else EarlyStop(stall=stall, stall_cpu=not presolves, plans_only=True)
    explored = _prove(plan, budget, early)
    left = budget.time_limit - (time.perf_counter() - t0)
    if explored.status == "optimal" or left < PROOF_MIN_SECONDS:
        return explored
    with _stops_with(explored):
        return _improve(explored, replace(budget, time_limit=left,
                                          floor=max(budget.floor, explored.lower_bound)))


def _improve(plan: Plan, budget: Budget) -> Plan:
    """Window LNS for the rest of the time, on a plan that CP-SAT was still improving or whose
    unhinted search stalled (``_explore``); LNS proves nothing, so the bound is ``budget.floor``, which
    carries CP-SAT's (not for spans, where ``_hand_off`` leaves it out: it holds in index order only)."""
    from schedc.solvers.lns import lns_plan

    return lns_plan(plan, budget)


def _prove(plan: Plan, budget: Budget, early: EarlyStop | None = None) -> Plan:
    """The proof search on a stalled plan: its bound, and its plan if it found a better one; with
    ``early``, only until that trigger fires (``_explore``)."""
    from schedc.solvers.cpsat_params import proof_params
    from schedc.solvers.cpsat_solve import cpsat_run

    t0, report = time.perf_counter(), budget.progress

    def better(event: Progress) -> None:  # the unhinted search starts from worse plans: not news
        if report is not None and event.best < plan.value:
            report(replace(event, source="cp-sat proof"))

    try:
        proved, _ = cpsat_run(plan, time_limit=budget.time_limit, workers=budget.workers, seed=budget.seed,
                              progress=better, floor=budget.floor, hint=False,
                              params=proof_params(budget.workers), early=early)
    except Interrupted as stop:  # the better plan, and the bound the search had proven meanwhile
        found = stop.plan
        kept = found if found is not None and found.value < plan.value else plan
        raise Interrupted(kept, None if found is None else max(budget.floor, found.lower_bound)) from None
    best = proved if proved.value < plan.value else plan
    bound = max(budget.floor, proved.lower_bound)
    answer = replace(best, lower_bound=bound, status="optimal" if best.value == bound else "feasible")
    if report is not None and bound > budget.floor:
        report_or_stop(report, Progress(best.value, bound, time.perf_counter() - t0, "cp-sat proof"),
                       answer, bound)
    return answer


class LnsSolver:
    """Large-neighbourhood search: CP-SAT on windows of the incumbent (``lns.py``)."""

    name = "lns"

    def __call__(self, incumbent: Plan, budget: Budget) -> Plan:
        from schedc.solvers.lns import lns_plan

        return lns_plan(unfused(incumbent), budget)


def unfused(plan: Plan) -> Plan:
    """The plan with each whole backward run as I then W back to back: never slower, never holding
    more (``dag.unfused_orders``), and the form the CP-SAT model and window LNS state plans in."""
    orders = unfused_orders(plan.problem, plan.orders)
    return plan if orders == plan.orders else replace(plan, orders=orders, source=f"{plan.source} (I+W)")


BACKENDS: dict[str, Solver] = {s.name: s for s in (ListSolver(), CpsatSolver(), LnsSolver())}


def pick_backend(problem: Problem) -> str:
    """The default backend: the full CP-SAT model while it is small enough to build and search
    (``CPSAT_MAX_TASKS``), else window LNS around the list plan."""
    return "cp-sat" if problem.num_tasks <= CPSAT_MAX_TASKS else "lns"
