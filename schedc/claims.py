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
    file whose cap was edited away after solving)."""
    best = best_cheap_plan(plan.problem, plan.objective)
    if best is not None and best.value < bound:
        raise ScheduleError(f"lower_bound {fmt_exact(bound)} exceeds the {best.source} schedule's "
                            f"{fmt_exact(best.value)} on the same problem: the bound is false")


def best_cheap_plan(problem: Problem, objective: str) -> Plan | None:
    """The best of the schedules within the caps that are cheap to build and replay: the textbook
    ones, and where none fits (a tight cap), one pass of the list scheduler and the sequential
    schedule, which fits every cap that admits a schedule at all."""
    from schedc.solvers.incumbent import fitting_baselines

    fitting = fitting_baselines(problem, objective)
    if not fitting:
        fitting = [p for p in _schedules_within_tight_caps(problem, objective) if p.fits()]
    return min(fitting, key=lambda o: o.value, default=None)


LIST_CHECK_MAX_TASKS = 2500
"""Up to this size (where CP-SAT proves bounds: ``backends.CPSAT_MAX_TASKS``, the same number, not
imported, as the core imports no solver module until it runs one; a test keeps them equal) a
claimed bound is also checked against one pass of the list scheduler: 0.05 s at 768 tasks; at
24,576 it took 0.5 s of a 2 s load."""


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
    """"proven", "false", "unknown" (not decided in time) or "none" (the plan claims no bound);
    ``validate`` adds "interrupted" (Ctrl-C, which ``prove_claim`` raises)."""
    line: str
    shorter: Plan | None = None
    """On "false": the schedule that ends before the bound, its own bound the analytic one."""


def prove_claim(plan: Plan, time_limit: float, workers: int | None = None) -> ClaimCheck:
    """Whether the plan's claimed bound L holds, by the one question that decides it: is there a
    schedule ending one tick before L (a horizon probe, ``solvers.probe``), or, for a bound on the
    largest span, one whose every rank's span ends that much sooner (``span_bound.span_probe``)?
    Makespans and spans are multiples of the problem's tick (the finest step of its times,
    ``time_scale``), so a bound between two of them claims the higher one.
    ``time_limit`` and ``workers`` as ``solve`` takes them: with one worker the limit is CP-SAT's
    deterministic time. Ctrl-C during the probe raises ``KeyboardInterrupt``: no verdict."""
    from schedc.solvers.arguments import check_arguments
    from schedc.solvers.cpsat_model import check_integer_model
    from schedc.solvers.feasibility import check_caps

    if not isinstance(plan, Plan):
        raise ArgumentError(f"prove_claim needs a Plan, got {type(plan).__name__}")
    time_limit, workers = check_arguments(plan.problem, time_limit, workers, 0, None)
    bound = plan.lower_bound
    if bound is None:
        return ClaimCheck("none", "the file claims no lower bound to check")
    check_caps(plan.problem)  # a cap no schedule fits: every bound would hold, vacuously
    unit = Fraction(1, plan.problem.time_scale)
    horizon = unit * -(-bound // unit) - unit  # the latest end (or span) the bound rules out
    if horizon < (analytic := analytic_bound(plan)):  # no schedule ends (or spans) by it
        return ClaimCheck("proven", f"the lower bound {fmt(bound)} is proven: the analytic bound covers it")
    span = plan.objective != "makespan"
    how = f"{'a span probe' if span else 'a horizon probe'} at {fmt(horizon)}"
    cheap = best_cheap_plan(plan.problem, plan.objective)  # also keeps the probe's horizon finite
    if cheap is not None and cheap.value <= horizon:  # a bound above a textbook schedule, say
        return _false(bound, cheap, analytic, f"the {cheap.source} schedule")  # none of the probe's work
    fitting = [p for p in (plan, cheap) if p is not None and p.fits()]
    incumbent = min(fitting, key=lambda p: p.value, default=plan)  # within the cap (a span probe's start)
    try:
        check_integer_model(plan.problem)  # as solve: costs CP-SAT's integers cannot hold
    except ProblemError as err:
        why = str(err).partition(": use")[0]  # not solve's advice (coarser units, the list backend)
        raise ProblemError(f"no horizon probe can check this bound: {why}") from None
    outcome, found, interrupted = _probe(incumbent, horizon, time_limit, workers)
    if interrupted:  # Ctrl-C stopped the search: no verdict, and not "in S seconds" either
        raise KeyboardInterrupt
    if outcome == "refuted":
        none = f"keeps every rank's span within {fmt(horizon)}" if span else f"ends by {fmt(horizon)}"
        return ClaimCheck("proven", (f"the lower bound {fmt(bound)} is proven: no schedule {none} "
                                     f"({how.partition(' at')[0]}, CP-SAT)"))
    if outcome == "found":
        return _false(bound, found, analytic, f"found by {how}")
    return ClaimCheck("unknown", (f"the lower bound {fmt(bound)} was neither proven nor refuted in "
                                  f"{time_limit:g} s ({how}; give more time)"))


def _false(bound: Fraction, found: Plan, analytic: Fraction, how: str) -> ClaimCheck:
    """The verdict on a bound that ``found``, a schedule within the cap, beats; it is the shorter
    schedule, with the analytic bound (optimal where it meets it)."""
    value = f"has a largest span of {fmt(found.value)}" if found.objective != "makespan" else \
        f"ends at {fmt(found.value)}"
    status = "optimal" if found.value == analytic else "feasible"
    line = f"lower_bound {fmt(bound)} is false: a schedule within the cap {value} ({how})"
    return ClaimCheck("false", line, replace(found, lower_bound=analytic, status=status))


def _probe(plan: Plan, horizon: Fraction, time_limit: float, workers: int) -> tuple[str, Plan | None, bool]:
    """The probe for the plan's objective: ("refuted" | "found" | "unknown", the plan found, whether
    Ctrl-C stopped it)."""
    if plan.objective != "makespan":
        from schedc.solvers.span_bound import span_probe

        return span_probe(plan, horizon, time_limit=time_limit, workers=workers)
    from schedc.solvers.probe import probe

    outcome, found, answer = probe(plan, horizon, time_limit=time_limit, workers=workers, seed=0)
    return outcome, found, answer.interrupted
