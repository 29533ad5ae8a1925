"""A lower bound on the largest per-rank span that holds for every plan.

The CP-SAT model fixes, per (stage, kind), the order of microbatches (``solvers.symmetry``). That
loses no makespan: relabelling a schedule into that order keeps every rank's busy intervals, and the
simulator's replay of the relabelled orders only moves tasks earlier. A span can grow when tasks
move earlier, though: a rank whose order begins with a later microbatch waits for it and starts
later. p=2 m=2 v=1, stage costs (tf, tb, tw) = (5, 2, 0) and (3, 1, 6): rank 1 starting with 1F1 (at
10, not 5) gives a largest span of 20, and no plan in index order does better than 21. So that
model's optimum is only the best plan in index order, and its bound no bound at all; ``solve``
reports for spans the analytic bound, rank 0's least end (``first_rank_floor``) and this one:
CP-SAT's proven bound on the model without the order and the implied constraints, where each rank's
span runs from its first start in the model (a variable), so that the replay of every plan within
the caps is one of its solutions. A replay starts each rank as soon as its first task's input
arrives, and so does the model (``cpsat_model._pin_first_start``); later tasks may still wait in it
of their own accord, so the bound stays below the best plan where such waits pay (p=3 m=5 vshape cap
2: the analytic 16 against 17.5 for the best plan in index order). Measured on 60 random small
problems, 2 s each: 58 spans proven optimal with the first start pinned, 53 without. Fixing the
model's starts to the replays of 248 random plans within their caps was feasible every time, at
their spans.

Horizon: in the replay of a plan whose ranks' spans are at most S, the rank that starts k-th waits
only for ranks that started before it (it has run nothing yet), so it starts by (k - 1)(S + comm),
and the last end is at most (p - 1)(S + comm) + S.
"""

from __future__ import annotations

import time
from fractions import Fraction

from schedc.actions import Action
from schedc.errors import ScheduleError
from schedc.plan import Plan
from schedc.problem import Problem
from schedc.solvers.backends import CPSAT_MAX_TASKS
from schedc.solvers.bound_phases import MIN_PHASE_SECONDS
from schedc.solvers.cpsat_model import add_floor, build_model
from schedc.solvers.cpsat_solve import CpsatResult, extract_orders, solve_model
from schedc.solvers.progress import Interrupted, Progress, ProgressFn, report_or_stop


def span_horizon_any_order(problem: Problem, max_span: Fraction) -> Fraction:
    """An end by which the replay of some plan of span at most ``max_span`` finishes (above)."""
    return (problem.p - 1) * (max_span + problem.comm) + max_span


def span_relaxation_bound(problem: Problem, max_span: Fraction, *, time_limit: float, workers: int,
                          seed: int = 0, floor: Fraction = Fraction(0)) -> Fraction:
    """CP-SAT's proven lower bound on every plan's largest span, given a plan of ``max_span``
    (at most ``max_span``: that plan's value bounds the optimum from above)."""
    bound, result = _relaxation(problem, max_span, time_limit, workers, seed, floor)
    if result.interrupted:  # Ctrl-C stops CP-SAT as its limit would: the bound proven by then counts
        raise Interrupted(None, bound)
    return bound


def _relaxation(problem: Problem, max_span: Fraction, time_limit: float, workers: int, seed: int,
                floor: Fraction) -> tuple[Fraction, CpsatResult]:
    cm = build_model(problem, objective="span", horizon=span_horizon_any_order(problem, max_span),
                     symmetry=False, implied=False, free_start=True)
    add_floor(cm, floor)
    result = solve_model(cm, time_limit=time_limit, workers=workers, seed=seed, floor=floor)
    if result.status in ("INFEASIBLE", "MODEL_INVALID"):  # the plan's own replay is a solution: a bug
        raise ScheduleError(f"internal error: CP-SAT found the span relaxation {result.status}, yet a plan "
                            "solves it")
    return min(max(floor, result.bound), max_span), result


def span_probe(plan: Plan, limit: Fraction, *, time_limit: float, workers: int,
               seed: int = 0) -> tuple[str, Plan | None, bool]:
    """Whether some plan's largest span is at most ``limit`` (a multiple of the problem's tick):
    ("refuted" | "found" | "unknown", the plan found, whether Ctrl-C stopped it). It runs ``solve``'s
    two span bounds: rank 0's end (``FIRST_RANK_SHARE`` of the time, up to ``FIRST_RANK_MAX_TASKS``),
    then the relaxation, of which every plan within the caps is a solution. A proven bound above
    ``limit`` refutes it; a solution counts only where the replay of its orders keeps every span
    within ``limit``. Asked as a decision (the makespan probe's form: the relaxation held to ``limit``
    with no objective) it proved nothing: p=3 m=5 vshape mem=2's 17.5, which rank 0's end proves
    in 0.2 s, was undecided at 17 after 10 s."""
    from schedc.solvers.first_rank_end import first_rank_end

    began, problem = time.perf_counter(), plan.problem
    if problem.num_tasks <= FIRST_RANK_MAX_TASKS:
        share = time_limit * FIRST_RANK_SHARE
        bound, result = first_rank_end(problem, time_limit=share, workers=workers, seed=seed, plan=plan)
        verdict = _span_verdict(plan, limit, bound, result)
        if verdict[0] != "unknown" or verdict[2]:
            return verdict
        time_limit -= share if workers == 1 else time.perf_counter() - began  # deterministic with one
    bound, result = _relaxation(problem, plan.value, max(time_limit, 0.1), workers, seed, Fraction(0))
    return _span_verdict(plan, limit, bound, result)


def _span_verdict(plan: Plan, limit: Fraction, bound: Fraction,
                  result: CpsatResult) -> tuple[str, Plan | None, bool]:
    if bound > limit:  # before any replay of the model's solution, which a refutation does not need
        return "refuted", None, result.interrupted
    found = _shorter(plan, result.starts, "cp-sat probe")
    if found is not plan and found.value <= limit:
        return "found", found, result.interrupted
    return "unknown", None, result.interrupted


FIRST_RANK_SHARE = 0.3
"""Most of a span solve's time that the bound on rank 0's end (``first_rank_end``) may take, ahead of
the search (``portfolio``), which gets what it leaves and its bound as the floor it stops at. The
headline's span (151, the list plan's) was proven in 3.8-4.1 s when it ran after the search, which
first proved 151 optimal among plans in index order, and in 2.3-2.6 s ahead; with half of the
relaxation's fifth (1 s of 10) it was not proven at all (benchmarks/SOLVER_NOTES.md)."""
FIRST_RANK_MIN_SECONDS = 0.5
"""A smaller share goes to the search: below it the phase proved nothing on 768 to 2,400 tasks (2
workers) and ran 0.1-0.5 s past its share (a model's build and CP-SAT's presolve), so a 0.5 s span
solve ended after 0.9-1.1 s (the reviewer's)."""
FIRST_RANK_MAX_TASKS = CPSAT_MAX_TASKS
"""Larger problems skip that bound: building its whole model outlasts the share (p=32 m=128 v=2
mem=8, 24,576 tasks: a 20 s span solve ended after 29 s instead of 22 s, its bound unmoved), and
``auto`` searches them by LNS, not as one model, for the same reason."""


def span_floor(plan: Plan, floor: Fraction, seconds: float, workers: int, seed: int,
               progress: ProgressFn | None, t0: float) -> tuple[Plan, Fraction]:
    """``solve``'s span bound phase after the search: the larger of ``floor`` and the relaxation's
    bound given ``plan``, reported as a progress line where it moved; and the relaxation's own
    solution in place of ``plan`` where its replay is shorter. Its model keeps no microbatch order, so
    it reaches spans that the search's cannot (the p=2 m=2 example above: 20, where the search ends
    at 21)."""
    if seconds <= MIN_PHASE_SECONDS or floor >= plan.value:
        return plan, floor
    bound, result = _relaxation(plan.problem, plan.value, seconds, workers, seed, floor)
    try:
        found = _shorter(plan, result.starts)
    except KeyboardInterrupt:  # a Ctrl-C while its solution replays: the bound proven stays
        raise Interrupted(None, bound) from None
    if result.interrupted:
        raise Interrupted(found, bound)
    if progress is not None and (bound > floor or found is not plan):
        source = "span bound" if found is plan else found.source
        report_or_stop(progress, Progress(found.value, bound, time.perf_counter() - t0, source), found, bound)
    return found, max(floor, bound)


def first_rank_floor(plan: Plan, floor: Fraction, seconds: float, workers: int, seed: int,
                     progress: ProgressFn | None, t0: float) -> tuple[Plan, Fraction, float]:
    """The span phase ahead of the search, the bound on rank 0's end within ``seconds``: its model's
    solution where its replay's span is shorter (a plan in index order from a makespan-like search:
    p=4 m=8 vshape mem=2, comm 1/2, tb=2 ended at 62 in a 2 s one-worker run, against the span
    search's 62.5; 59 is optimal), the floor raised to that bound, and the seconds it left unused:
    with one worker in deterministic time, as the phase is counted, once its model is solved; with
    several in wall time, its model's build and its plan's replay included (counting CP-SAT's search
    alone, a 2 s span solve of 2,400 tasks ended after 2.41 s, the reviewer's)."""
    from schedc.solvers.first_rank_end import first_rank_end

    if seconds <= MIN_PHASE_SECONDS or plan.problem.num_tasks > FIRST_RANK_MAX_TASKS:
        return plan, floor, seconds
    began = time.perf_counter()
    bound, result = first_rank_end(plan.problem, time_limit=seconds, workers=workers, seed=seed, plan=plan)
    try:
        found = _shorter(plan, result.starts, "rank 0 end")
    except KeyboardInterrupt:  # a Ctrl-C while its solution replays: the bound proven stays
        raise Interrupted(None, max(floor, min(bound, plan.value))) from None
    raised = max(floor, min(bound, found.value))
    if result.interrupted:
        raise Interrupted(found, raised)
    if progress is not None and (raised > floor or found is not plan):
        report_or_stop(progress, Progress(found.value, raised, time.perf_counter() - t0, "rank 0 end"),
                       found, raised)
    if workers > 1:
        return found, raised, seconds - (time.perf_counter() - began)
    # one worker refunds only after a proof: stopped in presolve, CP-SAT reported 0.0011 or 0.05 to
    # 0.65 deterministic units for one 0.7-unit call (the reviewer), and the search's budget, in
    # deterministic time so that a seed repeats its plan, must not depend on that
    return found, raised, seconds - result.deterministic_time if result.optimal else 0.0


def _shorter(plan: Plan, starts: dict[Action, Fraction] | None, source: str = "span relaxation") -> Plan:
    """The replay of a model's solution where its span is below ``plan``'s, else ``plan``.
    Its orders keep every rank's memory events in the model's order, so its peaks are the model's,
    within the caps; its tasks only move earlier, and its ranks start as the model's do."""
    if starts is None:
        return plan
    found = Plan(problem=plan.problem, orders=extract_orders(plan.problem, starts), source=source,
                 status="feasible", objective="span")
    return found if found.value < plan.value else plan
