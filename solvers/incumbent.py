"""The incumbent: the best quick plan that fits the caps, the warm start of every search.

Candidates: the memory-aware list scheduler (``list_scheduler``, always valid within caps >= 1)
and every textbook baseline that applies and fits. ``sequential_orders`` is the schedule of the
feasibility argument (``solvers.feasibility``): one microbatch at a time through every stage and
back, valid under every feasible cap, and a deliberately poor start for tests of the searches.
"""

from __future__ import annotations

import time
from functools import lru_cache
from typing import TYPE_CHECKING

from schedc.actions import Action
from schedc.baselines import BASELINES, applicable
from schedc.baselines.classic import backward_actions
from schedc.errors import SchedcError, ScheduleError
from schedc.plan import Plan
from schedc.problem import Problem
from schedc.simulate import Orders
from schedc.solvers.progress import Interrupted

if TYPE_CHECKING:
    from schedc.solvers.list_scheduler import ListResult


def sequential_orders(problem: Problem) -> Orders:
    """Microbatch after microbatch: F through every stage, then the backward (I then W, or B) back."""
    orders: list[list[Action]] = [[] for _ in range(problem.p)]
    stages = range(problem.num_stages)
    for i in range(problem.m):
        for s in stages:
            orders[problem.stage_rank[s]].append(Action("F", s, i))
        for s in reversed(stages):
            orders[problem.stage_rank[s]].extend(backward_actions(problem, s, i))
    return tuple(tuple(o) for o in orders)


def list_plan(problem: Problem, objective: str, time_budget: float | None = None,
              task_budget: int | None = None) -> Plan:
    """The best list schedule over the scheduler's variants (within ``time_budget`` seconds, or
    ``task_budget`` scheduled tasks: ``best_list_result``)."""
    from schedc.solvers.list_scheduler import best_list_result

    try:
        result = best_list_result(problem, objective, time_budget=time_budget, task_budget=task_budget)
    except Interrupted as stop:  # Ctrl-C after some runs: the best of them, as a Plan
        raise Interrupted(_as_plan(problem, objective, stop.plan)) from None
    try:
        return _as_plan(problem, objective, result)
    except KeyboardInterrupt:  # while its replay runs (seconds at 400k tasks): the run is the answer
        raise Interrupted(_as_plan(problem, objective, result)) from None


def _as_plan(problem: Problem, objective: str, result: ListResult) -> Plan:
    """The run as a Plan. Its admission keeps every rank within its cap by construction, so a run
    over a cap is the scheduler's bug: said so, rather than offered as an incumbent."""
    plan = Plan(problem=problem, orders=result.orders, source=f"list:{result.variant}", objective=objective)
    if not plan.fits():
        raise ScheduleError(f"internal error: the list schedule {result.variant} exceeds an activation cap")
    return plan


@lru_cache(maxsize=1)
def baseline_plans(problem: Problem, objective: str = "makespan") -> tuple[Plan, ...]:
    """Every applicable baseline, within the caps or not (one replay each: no bound). The last
    problem's are kept: ``solve`` starts from them and its report names the best, and on 67,000 tasks
    building and replaying them takes seconds. They stay in memory until another problem's are
    built (``baseline_plans.cache_clear()`` frees them: gigabytes near 10 million tasks)."""
    plans = []
    for name in applicable(problem):
        try:
            orders = BASELINES[name].build(problem)
            plans.append(Plan(problem=problem, orders=orders, source=name, objective=objective))
        except SchedcError:
            continue
    return tuple(plans)


def fitting_baselines(problem: Problem, objective: str = "makespan") -> list[Plan]:
    """Every applicable baseline whose replay stays within the caps."""
    return [plan for plan in baseline_plans(problem, objective) if plan.fits()]


def best_incumbent(problem: Problem, objective: str = "makespan", *,
                   time_budget: float | None = None, task_budget: int | None = None) -> Plan:
    """The candidate with the smallest objective value (ties: the list scheduler, then baselines).
    A Ctrl-C in the list phase still weighs the baselines (milliseconds on the grid, seconds near
    67,000 tasks, and the summary builds them anyway; a second Ctrl-C skips them): its best run so far
    was returned alone, slower than a fitting baseline the summary named."""
    t0 = time.perf_counter()
    try:
        candidates, interrupted = [list_plan(problem, objective, time_budget, task_budget)], False
    except Interrupted as stop:
        candidates, interrupted = [stop.plan], True
    try:
        candidates += fitting_baselines(problem, objective)
    except KeyboardInterrupt:  # Ctrl-C (a second one, if interrupted): the list plan is a plan
        raise Interrupted(candidates[0]) from None
    best = min(candidates, key=lambda plan: plan.value)
    if interrupted:
        raise Interrupted(best)
    try:
        return Plan(problem=problem, orders=best.orders, source=best.source, objective=objective,
                    solve_seconds=time.perf_counter() - t0)
    except KeyboardInterrupt:
        raise Interrupted(best) from None
