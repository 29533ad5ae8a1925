"""Whether a plan's claimed lower bound can stand: a bound above the analytic one must not exceed
any schedule that fits the same cap. Run on every plan written or read (``plan_json``) and by
``validate``; the candidates it replays come from the baselines and the list scheduler."""

from __future__ import annotations

from dataclasses import dataclass, replace
from fractions import Fraction

from schedc.errors import ArgumentError, InfeasibleError, ProblemError, ScheduleError
from schedc.exact import fmt, fmt_exact
from schedc.plan import Plan
from schedc.problem import Problem


def check_claims(plan: Plan) -> None:
    """A bound the analytic one does not cover must not exceed a fitting baseline (``Plan`` itself
    checks the bound and status against the plan's own value and cap)."""
    bound = plan.lower_bound
    if bound is not None and bound > analytic_bound(plan):
        _check_bound_against_fitting_plans(plan, bound)


def analytic_bound(plan: Plan) -> Fraction:
    """The cap-aware analytic bound: no plan within the cap, baselines included, is below it, so a
    claimed bound up to it needs no baseline replays (most plans schedc writes)."""
    from schedc.solvers.bounds import objective_bound

    return objective_bound(plan.problem, plan.objective)


def _check_bound_against_fitting_plans(plan: Plan, bound: Fraction) -> None:
    """A lower bound above the value of any schedule that fits the same cap is false (say, a plan
    file whose cap was edited away after solving). The candidates are cheap to build and replay: the
    textbook schedules, and where none fits (a tight cap), one pass of the list scheduler and the
    sequential schedule, which fits every cap that admits a schedule at all."""
    from schedc.solvers.incumbent import fitting_baselines

    problem, objective = plan.problem, plan.objective
    fitting = fitting_baselines(problem, objective)
    if not fitting:
        fitting = [p for p in _schedules_within_tight_caps(problem, objective) if p.fits()]
    best = min(fitting, key=lambda o: o.value, default=None)
    if best is not None and best.value < bound:
        raise ScheduleError(f"lower_bound {fmt_exact(bound)} exceeds the {best.source} schedule's "
                            f"{fmt_exact(best.value)} on the same problem: the bound is false")


LIST_CHECK_MAX_TASKS = 2500
"""Up to this size (where CP-SAT proves bounds) a claimed bound is also checked against one pass of
the list scheduler: 0.05 s at 768 tasks; at 24,576 it took 0.5 s of a 2 s load."""


def _schedules_within_tight_caps(problem: Problem, objective: str) -> list[Plan]:
    """Plans to check a claimed bound against where no textbook schedule fits: the sequential one,
    within every cap that admits a schedule, and on smaller problems one list-scheduler pass. None
    under a cap no schedule meets (a bound there claims nothing)."""
    from schedc.solvers.incumbent import list_plan, sequential_orders

    sequential = Plan(problem=problem, orders=sequential_orders(problem), source="sequential",
                      objective=objective)
    if problem.num_tasks > LIST_CHECK_MAX_TASKS:
        return [sequential]
    try:
        return [list_plan(problem, objective, task_budget=problem.num_tasks), sequential]
    except InfeasibleError:  # the list scheduler refuses a cap below one microbatch's activations
        return []


@dataclass(frozen=True)
class ClaimCheck:
    """What ``prove_claim`` decided about a plan's claimed bound, and the line ``validate`` prints."""

    verdict: str
    """"proven", "false", "unknown" (not decided in time) or "none" (nothing a probe can decide);
    ``validate`` adds "interrupted" (Ctrl-C, which ``prove_claim`` raises)."""
    line: str
    shorter: Plan | None = None
    """On "false": the schedule that ends before the bound, its own bound the analytic one."""


def prove_claim(plan: Plan, time_limit: float, workers: int | None = None) -> ClaimCheck:
    """Whether the plan's claimed makespan bound L holds, by the one question that decides it: is
    there a schedule ending one tick before L (a horizon probe, ``solvers.probe``)? Makespans
    are multiples of the problem's tick (the finest step of its times, ``time_scale``), so a bound
    between two of them claims the higher one.
    ``time_limit`` and ``workers`` as ``solve`` takes them: with one worker the limit is CP-SAT's
    deterministic time. Ctrl-C during the probe raises ``KeyboardInterrupt``: no verdict."""
    from schedc.solvers.arguments import check_arguments
    from schedc.solvers.cpsat_model import check_integer_model
    from schedc.solvers.probe import probe

    if not isinstance(plan, Plan):
        raise ArgumentError(f"prove_claim needs a Plan, got {type(plan).__name__}")
    time_limit, workers = check_arguments(plan.problem, time_limit, workers, 0, None)
    bound = plan.lower_bound
    if bound is None:
        return ClaimCheck("none", "the file claims no lower bound to check")
    unit = Fraction(1, plan.problem.time_scale)
    horizon = unit * -(-bound // unit) - unit  # the latest end the bound rules out
    if bound <= (analytic := analytic_bound(plan)) or (plan.objective == "makespan" and horizon < analytic):
        return ClaimCheck("proven", f"the lower bound {fmt(bound)} is proven: the analytic bound covers it")
    if plan.objective != "makespan":
        return ClaimCheck("none", (f"the lower bound {fmt(bound)} on the largest span stays the file's "
                                   "claim: a horizon probe decides makespan bounds only"))
    try:
        check_integer_model(plan.problem)  # as solve: costs CP-SAT's integers cannot hold
    except ProblemError as err:
        why = str(err).partition(": use")[0]  # not solve's advice (coarser units, the list backend)
        raise ProblemError(f"no horizon probe can check this bound: {why}") from None
    outcome, found, answer = probe(plan, horizon, time_limit=time_limit, workers=workers, seed=0)
    if answer.interrupted:  # Ctrl-C stopped the search: no verdict, and not "in S seconds" either
        raise KeyboardInterrupt
    if outcome == "refuted":
        return ClaimCheck("proven", (f"the lower bound {fmt(bound)} is proven: no schedule ends by "
                                     f"{fmt(horizon)} (a horizon probe, CP-SAT)"))
    if outcome == "found":
        status = "optimal" if found.makespan == analytic else "feasible"
        return ClaimCheck("false", (f"lower_bound {fmt(bound)} is false: a schedule within the cap ends "
                                    f"at {fmt(found.makespan)} (found by a horizon probe at {fmt(horizon)})"),
                          replace(found, lower_bound=analytic, status=status))
    return ClaimCheck("unknown", (f"the lower bound {fmt(bound)} was neither proven nor refuted in "
                                  f"{time_limit:g} s (a horizon probe at {fmt(horizon)}; give more time)"))
