"""A B in a split problem's orders: one task for I and W together (torch's FULL_BACKWARD, which its
DualPipeV mixes with split backwards), replayed exactly and never better than I and W back to back."""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schedc.actions import Action
from schedc.baselines import baseline_plan
from schedc.dag import fused_backwards, task_index, unfused_orders
from schedc.plan import Plan
from schedc.plan_json import load_plan, save_plan
from schedc.problem import Problem
from schedc.simulate import simulate
from schedc.solvers import BACKENDS, Budget
from schedc.solvers.backends import unfused
from schedc.solvers.bounds import lower_bound
from schedc.validate import validate
from tests.strategies import problems, topological_orders
from tests.test_simulate import orders, times


def test_a_b_sends_its_gradient_after_the_weight_gradient_too():
    split = Problem(p=2, m=1)
    fused = simulate(split, orders("0F0 0B0", "1F0 1B0"))
    assert times(fused) == [[("0F0", 0, 1), ("0B0", 4, 6)], [("1F0", 1, 2), ("1B0", 2, 4)]]
    assert simulate(split, orders("0F0 0I0 0W0", "1F0 1I0 1W0")).makespan == 5  # 0I0 starts at 3
    mixed = simulate(split, orders("0F0 0I0 0W0", "1F0 1B0"))
    assert times(mixed)[0][1] == ("0I0", 4, 5)
    assert fused_backwards(split, mixed.actions) == {(1, 0)}
    assert fused_backwards(Problem(p=2, m=1, split=False), orders("0F0 0B0", "1F0 1B0")) == frozenset()


def test_a_b_frees_the_whole_activation_at_its_end():
    problem = Problem(p=1, m=2, mem=1, w_mem=Fraction(1, 2))
    assert validate(problem, orders("0F0 0B0 0F1 0I1 0W1")) == []
    assert validate(problem, orders("0F0 0I0 0F1 0W0 0B1")) == [
        "rank 0 position 2 action 0F1: activation memory 1.5 exceeds the cap 1"]


@settings(max_examples=60, deadline=None)
@given(problems(max_p=4, max_m=6).filter(lambda pr: not pr.split).flatmap(
    lambda pr: st.tuples(st.just(pr), topological_orders(pr))))
def test_a_split_problem_with_every_backward_whole_is_the_unsplit_one(case):
    unsplit, order = case
    split = replace(unsplit, split=True)
    assert simulate(split, order) == simulate(unsplit, order)
    assert validate(split, order) == validate(unsplit, order)


def _fuse(order: tuple[tuple[Action, ...], ...], pairs: set[tuple[int, int]], adjacent: bool):
    """Each pair's I becomes a B and its W goes (``adjacent``: its W moves right after its I instead).
    Both stay deadlock-free: nothing waits for a W."""
    out = []
    for rank in order:
        row = []
        for a in rank:
            whole = (a.stage, a.mb) in pairs
            if a.kind == "I" and whole:
                row += [Action("I", a.stage, a.mb), Action("W", a.stage, a.mb)] if adjacent else [
                    Action("B", a.stage, a.mb)]
            elif not (a.kind == "W" and whole):
                row.append(a)
        out.append(tuple(row))
    return tuple(out)


@settings(max_examples=80, deadline=None)
@given(st.data())
def test_a_b_is_never_better_than_its_i_and_w_back_to_back(data):
    """Why schedc's own plans never fuse: the same work, but the gradient leaves later and the
    activation stays no shorter. With free weight gradients (tw = 0) the two are the same."""
    problem = data.draw(problems(max_p=4, max_m=6).filter(lambda pr: pr.split))
    order = data.draw(topological_orders(problem))
    stage_mb = st.tuples(st.integers(0, problem.num_stages - 1), st.integers(0, problem.m - 1))
    pairs = data.draw(st.sets(stage_mb))
    fused = simulate(problem, _fuse(order, pairs, adjacent=False))
    apart = simulate(problem, _fuse(order, pairs, adjacent=True))
    end = {s.action: s.end for rank in apart.slots for s in rank}
    for rank in fused.slots:
        for s in rank:
            assert s.end >= end[s.action._replace(kind="W") if s.action.kind == "B" else s.action]
    assert all(f >= a for f, a in zip(fused.peak_mem, apart.peak_mem, strict=True))
    if all(problem.duration("W", s) == 0 for s in range(problem.num_stages)):
        assert fused.makespan == apart.makespan


def test_a_mixed_plan_round_trips_through_its_json(tmp_path):
    problem = Problem(p=2, m=2, tw=Fraction(1, 2), comm=Fraction(1, 4))
    plan = Plan(problem=problem, orders=orders("0F0 0F1 0B0 0I1 0W1", "1F0 1I0 1F1 1B1 1W0"), source="mixed")
    path = str(tmp_path / "plan.json")
    save_plan(plan, path)
    loaded = load_plan(path)
    assert loaded.orders == plan.orders and loaded.timeline == plan.timeline


@pytest.mark.parametrize("backend", ["list", "cp-sat", "lns"])
def test_a_backend_improves_on_a_plan_with_whole_backwards(backend):
    """A torch DualPipeV plan loaded from its CSV is a valid incumbent: the backends state it with
    I and W (never slower) and improve from there."""
    problem = Problem(p=2, m=4, v=2, placement="vshape", tb=2, comm=Fraction(1, 2))
    order = baseline_plan("dualpipev", problem).orders
    incumbent = Plan(problem=problem, orders=_fuse(order, {(s, i) for s in range(4) for i in (0, 2)}, False),
                     source="mixed")
    budget = Budget(time_limit=5, workers=1, seed=0, progress=None, floor=lower_bound(problem))
    plan = BACKENDS[backend](incumbent, budget)
    assert not any(a.kind == "B" for rank in plan.orders for a in rank)
    assert plan.fits() and plan.value <= unfused(incumbent).value < incumbent.value
    assert unfused(incumbent).orders == unfused_orders(problem, incumbent.orders)


def test_unfused_orders_run_each_b_as_i_then_w():
    problem = Problem(p=2, m=1)
    assert unfused_orders(problem, orders("0F0 0B0", "1F0 1B0")) == orders("0F0 0I0 0W0", "1F0 1I0 1W0")
    unsplit = Problem(p=2, m=1, split=False)
    assert unfused_orders(unsplit, orders("0F0 0B0", "1F0 1B0")) == orders("0F0 0B0", "1F0 1B0")


def test_error_lines_name_what_is_wrong_with_a_whole_backward():
    bad = validate(Problem(p=2, m=1), orders("0F0 0I0 0W0 9B0 9I0", "1F0 1I0 1W0"))
    assert [e.split(": ", 1)[1] for e in bad] == [
        "not a task of 2 stages x 1 microbatch (F/I/W, or B for I and W together)"] * 2
    bad = validate(Problem(p=2, m=1, split=False), orders("0F0 0I0 0W0", "1F0 1B0"))
    assert bad[0] == ("rank 0 position 1 action 0I0: not a task of 2 stages x 1 microbatch "
                      "(F/B; I and W need a split problem)")


def test_the_task_index_of_a_fused_set_is_built_once_however_the_set_is_passed():
    problem = Problem(p=2, m=2)
    index = task_index(problem, {(1, 0)})
    assert index is task_index(problem, frozenset({(1, 0)}))
    assert Action("B", 1, 0) in index.ids and Action("I", 1, 0) not in index.ids
    assert len(index.actions) == len(task_index(problem).actions) - 1
