"""The incumbent: the best quick plan that fits the caps, the warm start of every search.

Candidates: the memory-aware list scheduler (``list_scheduler``, always valid within caps >= 1),
every textbook baseline that applies and fits, and, as the last resort that always exists, the
sequential schedule (one microbatch at a time through every stage and back, which holds at most
one microbatch's activations: the feasibility argument of ``solvers.feasibility``).
"""

from __future__ import annotations

import time

from schedc.actions import Action
from schedc.baselines import applicable, baseline_plan
from schedc.errors import SchedcError
from schedc.plan import Plan
from schedc.problem import Problem
from schedc.simulate import Orders


def sequential_orders(problem: Problem) -> Orders:
    """Microbatch after microbatch: F through every stage, then the backward (I then W, or B) back."""
    orders: list[list[Action]] = [[] for _ in range(problem.p)]
    stages = range(problem.num_stages)
    for i in range(problem.m):
        for s in stages:
            orders[problem.stage_rank[s]].append(Action("F", s, i))
        for s in reversed(stages):
            back = [Action("I", s, i), Action("W", s, i)] if problem.split else [Action("B", s, i)]
            orders[problem.stage_rank[s]].extend(back)
    return tuple(tuple(o) for o in orders)


def list_plan(problem: Problem, objective: str, time_budget: float | None = None) -> Plan | None:
    """The best list schedule, or None while the list scheduler is not available."""
    try:
        from schedc.solvers.list_scheduler import best_list_result
    except ImportError:
        return None
    result = best_list_result(problem, objective, time_budget=time_budget)
    return Plan(problem=problem, orders=result.orders, source=f"list:{result.variant}", objective=objective)


def fitting_baselines(problem: Problem, objective: str = "makespan") -> list[Plan]:
    """Every applicable baseline whose replay stays within the caps."""
    plans = []
    for name in applicable(problem):
        try:
            plan = baseline_plan(name, problem)
        except SchedcError:
            continue
        if plan.fits():
            plans.append(Plan(problem=problem, orders=plan.orders, source=name, objective=objective))
    return plans


def best_incumbent(problem: Problem, objective: str = "makespan", *,
                   time_budget: float | None = None) -> Plan:
    """The candidate with the smallest objective value (ties: the list scheduler, then baselines)."""
    t0 = time.perf_counter()
    candidates = [c for c in [list_plan(problem, objective, time_budget)] if c is not None]
    candidates += fitting_baselines(problem, objective)
    if not candidates:
        candidates.append(Plan(problem=problem, orders=sequential_orders(problem), source="sequential",
                               objective=objective))
    best = min(candidates, key=lambda plan: plan.value)
    return Plan(problem=problem, orders=best.orders, source=best.source, objective=objective,
                solve_seconds=time.perf_counter() - t0)
