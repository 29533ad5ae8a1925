"""Properties over random small problems (p 1-6, m 1-12, v 1-3, random costs, caps, comm).

Two sources of valid plans: every applicable baseline, and random cuts of a topological order of
the task DAG (valid for every problem, so corruptions are tried on every shape of problem).
"""

from __future__ import annotations

import json
from dataclasses import replace
from fractions import Fraction

import networkx as nx
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schedc.actions import Action
from schedc.baselines import applicable, baseline_plan
from schedc.dag import build_dag, dependencies, lag
from schedc.errors import ScheduleError
from schedc.plan import Plan
from schedc.plan_json import plan_from_dict, plan_to_dict
from schedc.problem import Problem
from schedc.simulate import Orders, simulate
from schedc.solvers.bounds import lower_bound
from schedc.validate import timing_errors, validate
from tests.strategies import problems, topological_orders

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def work(problem: Problem, rank: int) -> Fraction:
    return sum((problem.duration(k, s) for s in problem.rank_stages[rank] for k in problem.kinds),
               Fraction(0)) * problem.m


def earliest_start(problem: Problem) -> dict[Action, Fraction]:
    """Longest path to each task with unlimited ranks: when it could start at the earliest."""
    graph = build_dag(problem)
    head: dict[Action, Fraction] = {}
    for a in nx.topological_sort(graph):
        head[a] = max((head[d] + graph.nodes[d]["duration"] + graph.edges[d, a]["lag"]
                       for d in graph.predecessors(a)), default=Fraction(0))
    return head


def assert_sound(problem: Problem, plan: Plan) -> None:
    """The figures of a valid plan obey the bounds and the definition of the ASAP replay."""
    t = plan.timeline
    assert validate(problem, plan.orders, check_memory=False) == []
    assert timing_errors(problem, t.slots) == []
    assert t.makespan >= lower_bound(replace(problem, mem=()))
    if plan.fits():  # the bound may use the cap: it binds only plans within it
        assert t.makespan >= lower_bound(problem)
    head = earliest_start(problem)
    for r, slots in enumerate(t.slots):
        assert t.spans[r] >= work(problem, r) == t.busy[r]
        assert t.makespan >= min(head[s.action] for s in slots) + work(problem, r)
        curve = max(level for _, level in t.memory_curve(problem, r))
        assert t.peak_mem[r] == curve == peak_at_starts(problem, slots)
    assert_asap(problem, plan.orders, t)


def peak_at_starts(problem: Problem, slots) -> Fraction:
    """A rank's peak from its times, not its order (the simulator sums deltas in order): at each
    F's start, 1/v per F started so far less what every backward ended by then frees (README: I frees
    (1-r)/v, W r/v, B all 1/v)."""
    unit, r = Fraction(1, problem.v), problem.w_mem
    freed = {"I": (1 - r) * unit, "W": r * unit, "B": unit, "F": Fraction(0)}
    starts = [s.start for s in slots if s.action.kind == "F"]
    held = (sum(unit for t0 in starts if t0 <= t) - sum(freed[s.action.kind] for s in slots if s.end <= t)
            for t in starts)
    return max(held, default=Fraction(0))


def assert_asap(problem: Problem, orders: Orders, t) -> None:
    """Each action starts exactly when its rank is free and its inputs have arrived."""
    end = {s.action: s.end for rank in t.slots for s in rank}
    for slots in t.slots:
        free = Fraction(0)
        for s in slots:
            arrive = [end[d] + lag(problem, d, s.action) for d in dependencies(problem, s.action)]
            assert s.start == max([free, *arrive])
            free = s.end


def round_trips(plan: Plan) -> bool:
    return plan_from_dict(json.loads(json.dumps(plan_to_dict(plan)))) == plan


@SETTINGS
@given(problems())
def test_every_applicable_baseline_is_a_sound_plan(problem):
    for name in applicable(problem):
        plan = baseline_plan(name, problem)
        assert plan.source == name
        assert_sound(problem, plan)
        assert plan.fits() == (validate(problem, plan.orders) == [])
        assert round_trips(plan)


@SETTINGS
@given(st.data())
def test_random_topological_cuts_are_sound_plans(data):
    problem = data.draw(problems())
    plan = Plan(problem=problem, orders=data.draw(topological_orders(problem)), source="random",
                lower_bound=lower_bound(problem), solve_seconds=data.draw(st.none() | st.floats(0, 100)))
    if plan.fits():  # a solver's status, which a plan over its cap cannot claim (plan_json)
        plan = replace(plan, status=data.draw(st.sampled_from(["heuristic", "feasible"])))
    assert_sound(problem, plan)
    assert round_trips(plan)


def valid_orders(data, problem: Problem) -> Orders:
    """A valid plan's orders: a baseline when one applies, else a random topological cut."""
    names = applicable(problem)
    if names and data.draw(st.booleans()):
        return baseline_plan(data.draw(st.sampled_from(names)), problem).orders
    return data.draw(topological_orders(problem))


def _replace_rank(orders: Orders, r: int, order: list[Action]) -> Orders:
    return (*orders[:r], tuple(order), *orders[r + 1:])


@SETTINGS
@given(st.data())
def test_dropped_action_is_missing(data):
    problem = data.draw(problems())
    orders = valid_orders(data, problem)
    r = data.draw(st.integers(0, problem.p - 1))
    k = data.draw(st.integers(0, len(orders[r]) - 1))
    dropped = orders[r][k]
    corrupt = _replace_rank(orders, r, [*orders[r][:k], *orders[r][k + 1:]])
    assert f"rank {r} action {dropped}: missing" in validate(problem, corrupt)


@SETTINGS
@given(st.data())
def test_duplicated_action_is_caught(data):
    problem = data.draw(problems())
    orders = valid_orders(data, problem)
    r = data.draw(st.integers(0, problem.p - 1))
    a = data.draw(st.sampled_from(orders[r]))
    k = data.draw(st.integers(0, len(orders[r])))
    corrupt = _replace_rank(orders, r, [*orders[r][:k], a, *orders[r][k:]])
    errors = validate(problem, corrupt)
    assert len(errors) == 1
    assert errors[0].endswith(f"action {a}: duplicated") and errors[0].startswith(f"rank {r} position ")


@SETTINGS
@given(st.data())
def test_backward_swapped_before_its_forward_deadlocks(data):
    problem = data.draw(problems())
    orders = valid_orders(data, problem)
    r = data.draw(st.integers(0, problem.p - 1))
    s = data.draw(st.sampled_from(problem.rank_stages[r]))
    i = data.draw(st.integers(0, problem.m - 1))
    back = Action("I" if problem.split else "B", s, i)
    order = list(orders[r])
    f, b = order.index(Action("F", s, i)), order.index(back)
    order[f], order[b] = order[b], order[f]
    errors = validate(problem, _replace_rank(orders, r, order))
    assert len(errors) == 1 and errors[0].startswith("deadlock: rank ")
    try:
        Plan(problem=problem, orders=_replace_rank(orders, r, order), source="corrupt")
    except ScheduleError as err:
        assert str(err) == errors[0]
    else:
        raise AssertionError("a deadlocked plan was accepted")


@SETTINGS
@given(st.data())
def test_cap_below_the_peak_is_a_memory_error(data):
    problem = data.draw(problems(caps=False))
    orders = valid_orders(data, problem)
    peaks = simulate(problem, orders).peak_mem
    r = data.draw(st.integers(0, problem.p - 1))
    below = peaks[r] - Fraction(1, data.draw(st.integers(2 * problem.v, 100)))
    caps = tuple(below if q == r else None for q in range(problem.p))
    errors = validate(replace(problem, mem=caps), orders)
    assert len(errors) == 1
    assert errors[0].startswith(f"rank {r} position ") and "exceeds the cap" in errors[0]
    at_peak = tuple(peaks[r] if q == r else None for q in range(problem.p))
    assert validate(replace(problem, mem=at_peak), orders) == []
