"""The CP-SAT model: its lossless extras, its hints, and its optima against brute force."""

from __future__ import annotations

import itertools
import random
from fractions import Fraction

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from ortools.sat.python import cp_model

from schedc.actions import Action
from schedc.baselines import applicable, baseline_plan
from schedc.dag import dependencies, lag, tasks
from schedc.errors import ScheduleError
from schedc.plan import Plan
from schedc.problem import Problem, StageCost
from schedc.simulate import Orders, simulate
from schedc.solvers.cpsat_model import add_hint, build_model
from schedc.solvers.cpsat_solve import extract_orders, solve_model
from schedc.solvers.incumbent import best_incumbent, sequential_orders
from schedc.solvers.list_portfolio import variants
from schedc.solvers.list_scheduler import run_variant
from schedc.solvers.symmetry import (
    MAX_OPTIONS,
    _maximal,
    canonical_starts,
    cap_precedences,
    frontier_options,
    order_pairs,
)
from schedc.validate import validate
from tests.strategies import problems, tight_problems

FEW = settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# ---- brute force: every per-rank order, no symmetry assumed ---------------------------------


def _extensions(problem: Problem, rank: int, limit: int) -> list[tuple[Action, ...]] | None:
    """Every order of the rank's tasks that respects its own-rank dependencies and its cap
    (None: more than ``limit``)."""
    mine = [a for a in tasks(problem) if problem.stage_rank[a.stage] == rank]
    preds = {a: {d for d in dependencies(problem, a) if d in mine} for a in mine}
    cap = problem.mem[rank]
    out: list[tuple[Action, ...]] = []

    def extend(prefix: list[Action], done: set[Action], level: Fraction) -> None:
        if len(out) > limit:
            return
        if len(prefix) == len(mine):
            out.append(tuple(prefix))
            return
        for a in mine:
            after = level + problem.mem_delta(a.kind)
            if a not in done and preds[a] <= done and (cap is None or after <= cap):
                prefix.append(a)
                done.add(a)
                extend(prefix, done, after)
                prefix.pop()
                done.discard(a)

    extend([], set(), Fraction(0))
    return out if len(out) <= limit else None


def brute_force(problem: Problem, objective: str = "makespan", limit: int = 4000) -> Fraction | None:
    """The optimum over every combination of per-rank orders within the caps (None: too many)."""
    per_rank = []
    for r in range(problem.p):
        ext = _extensions(problem, r, limit)
        if ext is None:
            return None
        per_rank.append(ext)
    if _product(len(e) for e in per_rank) > limit:
        return None
    best = None
    for orders in itertools.product(*per_rank):
        if validate(problem, orders):
            continue
        t = simulate(problem, orders)
        value = t.makespan if objective == "makespan" else t.max_span
        best = value if best is None else min(best, value)
    return best


def _product(values) -> int:
    out = 1
    for v in values:
        out *= v
    return out


def _solve(problem: Problem, objective: str = "makespan", time_limit: float = 20, **model_flags):
    """CP-SAT on the model with these flags, one worker, ``time_limit`` of deterministic time."""
    inc = best_incumbent(problem, objective)
    horizon = inc.makespan if objective == "makespan" else inc.makespan + inc.value
    cm = build_model(problem, objective=objective, horizon=horizon, **model_flags)
    return solve_model(cm, time_limit=time_limit, workers=1)


def optimum(problem: Problem, objective: str = "makespan", **model_flags) -> Fraction:
    """CP-SAT's proven optimum (fails the test if it is not proven within the limit). The limit is
    deterministic time, the same on every machine; it is wide so that another OR-Tools release,
    whose search may take longer, still proves these small problems (it stops at the proof)."""
    result = _solve(problem, objective, time_limit=60, **model_flags)
    assert result.optimal, result.status
    plan = Plan(problem=problem, orders=extract_orders(problem, result.starts), source="cp-sat",
                objective=objective)
    assert plan.fits() and plan.value == result.objective
    return result.objective


TINY = [
    Problem(p=2, m=2, split=False, mem=(1,)),
    Problem(p=2, m=2, split=False, tf=1, tb=2, comm=Fraction(1, 2)),
    Problem(p=2, m=2, tf=2, tb=1, tw=Fraction(1, 2), mem=(Fraction(3, 2),)),
    Problem(p=1, m=2, v=2, tf=1, tb=3, tw=1, mem=(1,)),
    Problem(p=1, m=3, v=2, split=False, mem=(Fraction(3, 2),)),
    Problem(p=2, m=3, split=False, tf=1, tb=2, mem=(2,)),
    Problem(p=2, m=2, v=1, stage_costs=(StageCost(1, 2, 1), StageCost(2, 1, 1)), mem=(1,), w_mem=0),
]


@pytest.mark.parametrize("problem", TINY, ids=lambda p: p.describe())
def test_proven_optimum_matches_brute_force(problem):
    expected = brute_force(problem)
    assert expected is not None, "instance too large for the brute force"
    assert optimum(problem) == expected


@pytest.mark.parametrize("problem", TINY[:4], ids=lambda p: p.describe())
def test_span_optimum_matches_brute_force(problem):
    expected = brute_force(problem, "span")
    assert optimum(problem, "span") == expected


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tight_problems(max_m=2, max_v=1), st.sampled_from(["makespan", "span"]))
def test_random_tiny_optima_match_brute_force(problem, objective):
    """Two ranks, two microbatches (the largest shape the brute force always finishes): random
    costs, latencies, binding caps and split, so cross-rank edges and comm matter (one rank hides
    them). The span model keeps microbatch index order, which can lose a span (solvers.span_bound):
    there it is the best plan in that order, no better than the best of all."""
    from tests.exhaustive import optimum as exhaustive_optimum

    expected = brute_force(problem, objective, limit=1500)
    assume(expected is not None)  # the brute force gave up: too many orders
    ours = optimum(problem, objective)
    if objective == "makespan":
        assert ours == expected
    else:
        assert expected <= ours == exhaustive_optimum(problem, "span", index_order=True)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tight_problems(max_m=4).filter(lambda p: p.num_tasks <= 24), st.sampled_from(["makespan", "span"]))
def test_random_small_optima_match_exhaustive_search(problem, objective):
    """tests/exhaustive.py (a separate depth-first search over replays) on slightly larger ones. Given
    our optimum as its upper limit it prunes hard, and still finds anything better; were ours not
    reachable it would answer just above it. Spans against the search in index order, the model's
    (see above)."""
    from tests.exhaustive import optimum as exhaustive_optimum

    ours = optimum(problem, objective)
    assert exhaustive_optimum(problem, objective, upper=ours, index_order=True) == ours


# ---- the lossless extras --------------------------------------------------------------------


def _random_valid_orders(problem: Problem, rng: random.Random):
    """Random per-rank orders (random list scheduling by topological order), or None if over the cap."""
    done: set[Action] = set()
    orders: list[list[Action]] = [[] for _ in range(problem.p)]
    todo = set(tasks(problem))
    while todo:
        ready = sorted(a for a in todo if all(d in done for d in dependencies(problem, a)))
        a = rng.choice(ready)
        orders[problem.stage_rank[a.stage]].append(a)
        done.add(a)
        todo.discard(a)
    orders_t = tuple(tuple(o) for o in orders)
    return orders_t if not validate(problem, orders_t) else None


@FEW
@given(problems(max_p=3, max_m=4, max_v=2, caps=False), st.randoms(use_true_random=False))
def test_canonical_relabelling_keeps_every_figure(problem, rng):
    """The symmetry argument of solvers.symmetry, executed: sorted start times per (stage, kind)
    handed to microbatches in order are again a schedule, with the same memory steps."""
    orders = _random_valid_orders(problem, rng)
    timeline = simulate(problem, orders)
    starts = canonical_starts(timeline)
    for a in starts:
        for d in dependencies(problem, a):
            assert starts[a] >= starts[d] + problem.duration(d.kind, d.stage) + lag(problem, d, a)
    for before, after in order_pairs(problem):
        assert starts[after] >= starts[before] + problem.duration(before.kind, before.stage)
    relabelled = simulate(problem, extract_orders(problem, starts))
    assert relabelled.makespan <= timeline.makespan
    assert relabelled.peak_mem == timeline.peak_mem


VARIANT_SAMPLE = 40


def _fitting_schedules(problem: Problem, rng: random.Random) -> list[Orders]:
    """Schedules within the cap made every way at hand: the sequential one, a random one, list
    scheduler variants, every baseline, and the optimum of the plain model (no symmetry breaking, no
    implied constraints), the one most likely to press against the cap where the extras cut. The
    variants are a random sample of ``VARIANT_SAMPLE`` per example (all of them, about 220, and the
    checks of their schedules took two thirds of the test's 27 s); over the 30 examples all but about
    one in 400 is expected to be drawn on some problem."""
    candidates = [sequential_orders(problem), _random_valid_orders(problem, rng)]
    every = list(variants(problem, thorough=True))
    candidates += [run_variant(problem, v).orders for v in rng.sample(every, min(VARIANT_SAMPLE, len(every)))]
    candidates += [baseline_plan(name, problem).orders for name in applicable(problem)]
    plain = _solve(problem, symmetry=False, implied=False, time_limit=5)
    if plain.starts is not None:
        candidates.append(extract_orders(problem, plain.starts))
    return [orders for orders in candidates if orders is not None and not validate(problem, orders)]


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tight_problems(max_m=4).filter(lambda p: p.num_tasks <= 48), st.randoms(use_true_random=False))
def test_cap_implied_constraints_hold_in_every_fitting_schedule(problem, rng):
    """Any schedule within the cap, relabelled, meets the cap precedences and release options.
    Binding caps only: a loose one implies no constraint, and the test would check nothing."""
    stages, microbatches = range(problem.num_stages), range(problem.m)
    assume(list(cap_precedences(problem))
           or any(frontier_options(problem, s, i) for s in stages for i in microbatches))
    candidates = _fitting_schedules(problem, rng)
    assert len(candidates) >= 2  # the sequential schedule and the plain optimum at least
    for orders in candidates:
        starts = canonical_starts(simulate(problem, orders))
        end = {a: t + problem.duration(a.kind, a.stage) for a, t in starts.items()}
        for release, alloc in cap_precedences(problem):
            assert end[release] <= starts[alloc]
        for s in stages:
            for i in microbatches:
                options = frontier_options(problem, s, i)
                if options:
                    ready = [max(end[a] for a in option) for option in options]
                    assert starts[Action("F", s, i)] >= min(ready)


@given(st.sets(st.tuples(*[st.integers(0, 3)] * 4), max_size=40))
def test_pareto_maximal_matches_the_pairwise_definition(found):
    """The sorted skyline keeps exactly the vectors no other one dominates, in their given order."""
    vectors = list(found)
    dominates = lambda o, v: o != v and all(x >= y for x, y in zip(o, v, strict=True))  # noqa: E731
    pairwise = [v for v in vectors if not any(dominates(o, v) for o in vectors)]
    assert _maximal(vectors) == (pairwise if len(pairwise) <= MAX_OPTIONS else None)


SMALL = [
    Problem(p=2, m=4, v=2, mem=(1,), tf=1, tb=2, tw=1),
    Problem(p=3, m=4, mem=(2,), tf=1, tb=1, tw=2),
    Problem(p=2, m=4, v=2, placement="vshape", split=False, mem=(Fraction(3, 2),), comm=Fraction(1, 2)),
    Problem(p=3, m=3, split=True, mem=(Fraction(3, 2),), w_mem=Fraction(1, 3)),
]


@pytest.mark.parametrize("problem", SMALL, ids=lambda p: p.describe())
def test_extras_lose_no_optimum(problem):
    """The model without symmetry breaking and implied constraints has the same optimum."""
    plain = optimum(problem, symmetry=False, implied=False)
    assert optimum(problem) == plain
    assert optimum(problem, implied=False) == plain


@FEW
@given(problems(max_p=2, max_m=4, max_v=2).filter(lambda p: p.m >= 2), st.sampled_from(["makespan", "span"]))
def test_extras_lose_no_optimum_on_random_problems(problem, objective):
    """The plain model (no symmetry breaking, no implied constraints) can take far longer to prove:
    where it does not within the limit, its proven bound and best plan still bracket the optimum."""
    plain = _solve(problem, objective, symmetry=False, implied=False)
    assert plain.objective is not None, plain.status
    assert plain.bound <= optimum(problem, objective) <= plain.objective


@pytest.mark.parametrize("problem", [SMALL[1], SMALL[3], TINY[2]], ids=lambda p: p.describe())
def test_one_stage_frontier_encoding_equals_cumulative(problem):
    """With v = 1 the model drops the cumulative (the release frontiers are exact): same optimum."""
    assert optimum(problem) == optimum(problem, cumulative=True)


# ---- hints and extraction -------------------------------------------------------------------


@FEW
@given(problems(max_p=3, max_m=4, max_v=2), st.sampled_from(["makespan", "span"]))
def test_incumbent_hint_is_a_solution_of_the_model(problem, objective):
    """Fixing every variable to the hinted value (the relabelled incumbent) leaves a feasible model."""
    inc = best_incumbent(problem, objective)
    from schedc.solvers.cpsat_model import span_horizon

    horizon = inc.makespan if objective == "makespan" else span_horizon(problem, inc.value)
    cm = build_model(problem, objective=objective, horizon=horizon)
    add_hint(cm, canonical_starts(inc.timeline), inc.value)
    solver = cp_model.CpSolver()
    solver.parameters.fix_variables_to_their_hinted_value = True
    solver.parameters.num_workers = 1
    solver.parameters.max_time_in_seconds = 10
    assert solver.solve(cm.model) == cp_model.OPTIMAL
    assert Fraction(int(solver.objective_value), cm.scale) == inc.value


def test_extract_puts_zero_length_release_before_a_simultaneous_start():
    problem = Problem(p=1, m=2, tw=0, mem=(1,), w_mem=Fraction(1, 2))
    f0, i0, w0, f1 = Action("F", 0, 0), Action("I", 0, 0), Action("W", 0, 0), Action("F", 0, 1)
    starts = {f0: 0, i0: 1, w0: 2, f1: 2, Action("I", 0, 1): 3, Action("W", 0, 1): 4}
    orders = extract_orders(problem, {a: Fraction(t) for a, t in starts.items()})
    assert orders[0][:4] == (f0, i0, w0, f1)
    assert not validate(problem, orders)


def test_a_model_that_rejects_its_own_incumbent_is_an_internal_error(monkeypatch):
    """The incumbent always solves the model, so INFEASIBLE means a modelling bug: it must not pass
    as 'no time to load the hint' with the incumbent marked feasible."""
    import schedc.solvers.cpsat_solve as cpsat_solve

    def broken(*args, **kwargs):
        cm = build_model(*args, **kwargs)
        cm.model.add(cm.objective_var < 0)
        return cm

    monkeypatch.setattr(cpsat_solve, "build_model", broken)
    with pytest.raises(ScheduleError, match="internal error: CP-SAT found the model INFEASIBLE"):
        cpsat_solve.cpsat_run(best_incumbent(Problem(p=2, m=3, mem=(2,))), time_limit=5, workers=1)
