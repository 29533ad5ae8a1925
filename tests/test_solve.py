"""schedc.solvers.solve: the public interface, on random small problems and a few fixed ones."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from fractions import Fraction

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from schedc.baselines import applicable, baseline_plan
from schedc.errors import InfeasibleError, ProblemError
from schedc.plan import Plan
from schedc.problem import Problem
from schedc.solvers import Progress, solve
from schedc.solvers.bounds import lower_bound, span_lower_bound
from schedc.solvers.cpsat_model import build_model
from schedc.solvers.cpsat_solve import extract_orders, solve_model
from schedc.solvers.incumbent import best_incumbent
from schedc.validate import validate
from tests.conftest import unguarded
from tests.exhaustive import optimum as exhaustive_optimum
from tests.exhaustive import span_searchable
from tests.strategies import exhaustive_problems, problems, tight_problems
from tests.test_cpsat import optimum as cpsat_optimum

FEW = settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FEW
@given(problems(max_p=3, max_m=4, max_v=2), st.sampled_from(["makespan", "span"]))
def test_solver_plan_is_valid_bounded_and_beats_every_fitting_baseline(problem, objective):
    plan = solve(problem, time_limit=5, workers=1, objective=objective)
    assert validate(problem, plan.orders) == []
    peaks = zip(plan.timeline.peak_mem, problem.mem, strict=True)
    assert all(cap is None or peak <= cap for peak, cap in peaks)
    assert plan.objective == objective and plan.status in ("optimal", "feasible", "heuristic")
    analytic = lower_bound(problem) if objective == "makespan" else span_lower_bound(problem)
    assert analytic <= plan.lower_bound <= plan.value
    _check_no_fitting_baseline_is_better(plan)
    if plan.status == "optimal":
        assert plan.value == plan.lower_bound
    if objective == "makespan":  # the bound phases and extras against CP-SAT's proof on the plain model
        assert plan.lower_bound <= cpsat_optimum(problem, symmetry=False) <= plan.value


def _check_no_fitting_baseline_is_better(plan: Plan) -> None:
    """Every applicable baseline, checked against the caps here rather than through the solver's
    own ``fitting_baselines``, which a solver bug could empty."""
    problem = plan.problem
    for name in applicable(problem):
        baseline = baseline_plan(name, problem)
        if not validate(problem, baseline.orders):  # within the caps
            value = baseline.makespan if plan.objective == "makespan" else baseline.timeline.max_span
            assert plan.value <= value, name


@settings(max_examples=40, deadline=None)
@given(tight_problems().filter(lambda p: p.num_tasks <= 24), st.sampled_from(["makespan", "span"]))
def test_solve_agrees_with_exhaustive_search_under_binding_caps(problem, objective):
    """Against ground truth computed apart from the solver (tests/exhaustive.py) and baselines
    checked here, not through the solver's own fitting_baselines: whatever phase proves a plan
    (list heuristic meeting a bound, CP-SAT, relaxation, probes), its bound and status are true."""
    assume(objective == "makespan" or span_searchable(problem))
    with unguarded():
        plan = solve(problem, time_limit=5, workers=1, objective=objective)
    _check_against_exhaustive_search(plan)
    _check_no_fitting_baseline_is_better(plan)


def _check_against_exhaustive_search(plan: Plan) -> None:
    """The bound holds and the status is true against every order. A makespan is always proven on
    these sizes in 5 s; a span is searched in microbatch index order, which may lose it, and bounded
    by a weaker relaxation (solvers.span_bound), so it may end with a gap. Spans are drawn only
    where every order can be searched (``span_searchable``): against the index-order optimum, a
    bound between it and the true optimum would pass (the regression test below)."""
    problem, objective = plan.problem, plan.objective
    assert objective == "makespan" or span_searchable(problem)
    best = exhaustive_optimum(problem, objective, upper=plan.value)  # the plan reaches it: exact
    assert best is not None and plan.lower_bound <= best <= plan.value
    assert (plan.status == "optimal") == (plan.value == plan.lower_bound)
    if objective == "makespan":
        assert plan.status == "optimal" and plan.value == best
    assert plan.fits() and validate(problem, plan.orders) == []


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(exhaustive_problems().filter(lambda p: p.num_tasks <= 30), st.sampled_from(["makespan", "span"]))
def test_solve_agrees_with_exhaustive_search_on_up_to_four_ranks(problem, objective):
    """As above on what two ranks under a binding cap cannot show: a middle rank, m < p, p = 1,
    no cap, and caps on some ranks only."""
    assume(objective == "makespan" or span_searchable(problem))
    with unguarded():
        _check_against_exhaustive_search(solve(problem, time_limit=5, workers=1, objective=objective))


def test_a_span_that_only_another_microbatch_order_reaches_is_not_claimed():
    """Rank 1 starting with 1F1 waits until 10, and ends the largest span at 20; in microbatch index
    order the best is 21. The search's 21 was once reported optimal, its bound 21 (solvers.span_bound);
    the span relaxation's own plan now reaches 20, proven."""
    problem = Problem(p=2, m=2, stage_costs=[(5, 2, 0), (3, 1, 6)])
    orders = (("0F0", "0F1", "0I1", "0W1", "0I0", "0W0"), ("1F1", "1I1", "1F0", "1I0", "1W0", "1W1"))
    hand = Plan(problem=problem, orders=orders, source="hand", objective="span")
    assert hand.fits() and hand.value == 20 == exhaustive_optimum(problem, "span")
    assert exhaustive_optimum(problem, "span", index_order=True) == 21
    for workers in (1, 2):
        events: list[Progress] = []
        plan = solve(problem, time_limit=5, workers=workers, objective="span", progress=events.append)
        assert plan.lower_bound == 20 == plan.value and plan.status == "optimal"
        assert plan.source == "span relaxation" and validate(plan) == []
        assert all(e.bound <= 20 for e in events)


@FEW
@given(tight_problems(max_m=4), st.sampled_from(["makespan", "span"]))
def test_replay_of_cp_sats_orders_reproduces_its_optimum(problem, objective):
    """The simulator's replay of the orders extracted from CP-SAT's solution never ends later than
    CP-SAT's own times (it starts each task as soon as possible in the same order) and, at a proven
    optimum, reaches exactly CP-SAT's objective: the numbers schedc prints are the model's."""
    incumbent = best_incumbent(problem, objective)
    horizon = incumbent.makespan if objective == "makespan" else incumbent.makespan + incumbent.value
    result = solve_model(build_model(problem, objective=objective, horizon=horizon), time_limit=5, workers=1)
    assert result.starts is not None
    replay = Plan(problem=problem, orders=extract_orders(problem, result.starts), source="cp-sat",
                  objective=objective)
    assert replay.fits() and replay.value <= result.objective
    if result.optimal:
        assert replay.value == result.objective


def test_headline_shape_is_solved_to_a_proven_optimum(repeatable):
    problem = Problem(p=4, m=8, mem=(2,))
    plan = solve(problem, time_limit=20, workers=1)
    assert plan.status == "optimal" and plan.source == "cp-sat"
    assert plan.lower_bound == plan.makespan and plan.gap == 0
    assert plan.fits() and plan.solve_seconds is not None


def test_infeasible_cap_names_the_smallest_feasible_cap_before_any_search():
    calls = []
    with pytest.raises(InfeasibleError, match="smallest feasible cap 1"):
        solve(Problem(p=2, m=4, v=2, mem=(Fraction(3, 4),)), progress=calls.append)
    assert calls == []


def test_same_seed_one_worker_gives_the_same_plan(repeatable):
    """Stopped by the time limit, not by a proof: still the same plan (deterministic time)."""
    problem = Problem(p=6, m=12, v=2, mem=(2,), tf=1, tb=2, tw=1)
    first = solve(problem, time_limit=0.5, workers=1, seed=7, backend="cp-sat")
    second = solve(problem, time_limit=0.5, workers=1, seed=7, backend="cp-sat")
    assert first.status == "feasible"
    assert first.orders == second.orders and first.lower_bound == second.lower_bound


ONE_WORKER_RUN = """
from schedc.problem import Problem
from schedc.solvers import solve, wall_guard
wall_guard.WALL_GUARD = 1000  # as the repeatable fixture: deterministic time alone bounds each run
plan = solve(Problem(p=6, m=12, v=2, placement="vshape", mem=(2,), tb=2), time_limit={limit}, workers=1,
             seed=5, backend="{backend}", objective="{objective}")
print(plan.status, plan.value, plan.lower_bound, plan.orders)
"""


@pytest.mark.parametrize("backend, objective, limit", [("lns", "span", 1), ("cp-sat", "makespan", 1.2)])
def test_same_seed_one_worker_gives_the_same_plan_under_any_string_hashing(backend, objective, limit):
    """Window models are built in a fixed order, not in the order of sets of actions, which follows
    the per-process hash of their kind strings (PYTHONHASHSEED); a capped makespan solve by CP-SAT
    also runs the rank relaxations ahead of and after its search (from a 1.2 s limit on: below it,
    the share after is under its 0.1 s floor), whose budgets are deterministic. The three runs go at
    once: deterministic time alone bounds each, so sharing the cores changes nothing."""
    code = ONE_WORKER_RUN.format(backend=backend, objective=objective, limit=limit)
    procs = [subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, env={**os.environ, "PYTHONHASHSEED": seed})
             for seed in ("0", "1", "2")]
    try:
        runs = [proc.communicate(timeout=300) for proc in procs]
    finally:
        for proc in procs:
            proc.kill()  # no-op for those that ended; one stuck past the timeout goes with the others
    assert all(proc.returncode == 0 for proc in procs), [err for _, err in runs]
    outs = [out for out, _ in runs]
    assert outs[0].startswith("feasible") and outs[0] == outs[1] == outs[2]


def test_progress_reports_improvements_with_a_valid_bound():
    events: list[Progress] = []
    plan = solve(Problem(p=3, m=6, mem=(2,), tf=1, tb=2, tw=1), time_limit=10, workers=1,
                 progress=events.append)
    assert events and events[0].source.startswith(("list", "1f1b", "gpipe", "zb", "sequential"))
    bests = [e.best for e in events]
    assert bests == sorted(bests, reverse=True) and bests[-1] == plan.value
    assert events[-1].bound == plan.lower_bound  # the proof that ends a search gets its line too
    assert all(e.bound <= plan.value and 0 <= e.gap <= 1 for e in events)


def test_progress_times_count_from_the_start_of_the_solve():
    events: list[Progress] = []
    t0 = time.perf_counter()
    plan = solve(Problem(p=4, m=8, v=2, mem=(Fraction(3, 2),), tf=1, tb=2, tw=1), time_limit=5, workers=2,
                 progress=events.append)
    took = time.perf_counter() - t0
    assert len({e.source for e in events}) >= 2  # the heuristic's line, then a search's
    times = [e.elapsed for e in events]
    assert times == sorted(times) and times[0] >= 0 and times[-1] <= took
    searches = [e.elapsed for e in events if e.source != "final"]  # "final" comes after the timing
    assert plan.solve_seconds is not None and searches[-1] <= plan.solve_seconds


def test_list_backend_returns_the_heuristic_with_the_analytic_bound():
    problem = Problem(p=4, m=8, v=2, mem=(2,))
    plan = solve(problem, backend="list")
    assert plan.source.startswith("list") and plan.lower_bound == lower_bound(problem)
    assert plan.status == ("optimal" if plan.value == plan.lower_bound else "heuristic")


def test_span_objective_reports_the_largest_rank_span(repeatable):
    problem = Problem(p=3, m=4, mem=(3,))
    plan = solve(problem, time_limit=10, workers=1, objective="span")
    assert plan.objective == "span" and plan.value == plan.timeline.max_span
    assert plan.status == "optimal"
    makespan_plan = solve(problem, time_limit=10, workers=1)
    assert plan.value <= makespan_plan.timeline.max_span


@pytest.mark.parametrize("kwargs, message", [
    ({"objective": "latency"}, "objective must be one of"),
    ({"backend": "milp"}, "unknown solver backend"),
    ({"time_limit": 0}, "time_limit must be a positive, finite number"),
])
def test_bad_arguments_are_one_line_errors(kwargs, message):
    with pytest.raises(ProblemError, match=message):
        solve(Problem(p=2, m=2), **kwargs)


@pytest.mark.parametrize("costs", [
    {"tf": Fraction(10**20), "tb": Fraction(2 * 10**20), "tw": 7},
    {"tf": Fraction(1, 1000003), "tb": Fraction(1, 1000033), "tw": Fraction(1, 1000037),
     "comm": Fraction(1, 999983)},
])
def test_times_beyond_cpsat_integers_are_an_error_unless_the_list_backend_is_chosen(costs):
    """Huge or finely divided costs would overflow CP-SAT's 64-bit domains deep inside OR-Tools."""
    problem = Problem(p=4, m=8, mem=(Fraction(5, 2),), **costs)
    for backend in ("auto", "cp-sat", "lns"):
        with pytest.raises(ProblemError, match=r"CP-SAT's integers.*--backend list"):
            solve(problem, time_limit=1, backend=backend)
    plan = solve(problem, backend="list")
    assert not plan.violations() and plan.fits()


# ---- large-neighbourhood search -------------------------------------------------------------


@FEW
@given(problems(max_p=3, max_m=6, max_v=2), st.integers(0, 3), st.integers(1, 3))
def test_lns_window_gives_a_valid_shorter_plan_within_the_cap(problem, where, parts):
    """Any window of a poor incumbent (one microbatch at a time): the re-ordered plan is a valid
    schedule within the cap, and shorter when it is returned at all."""
    from schedc.solvers.incumbent import sequential_orders
    from schedc.solvers.lns import Window, solve_window

    plan = Plan(problem=problem, orders=sequential_orders(problem), source="sequential")
    span = int(plan.makespan * problem.time_scale)
    width = max(1, span // parts)
    t0 = min(span - 1, where * width // 2)
    result = solve_window(plan, Window(t0, t0 + width), time_limit=5)
    better = result.plan
    if better is None:  # nothing better found: what the sub-model claimed is no shorter
        assert result.claimed is None or result.claimed >= plan.makespan
    else:
        assert validate(problem, better.orders) == [] and better.fits()
        assert better.makespan < plan.makespan == plan.value
        assert result.claimed is not None and better.makespan <= result.claimed


def test_lns_windows_over_a_poor_plan_find_its_optimum_and_shorten_its_middle():
    """The property above accepts "nothing better"; here a window must find something. Over the
    whole plan every task is free, so the window's optimum is the solver's; over its middle third
    the sequential plan (40: one microbatch at a time, m (p tf + p tb + tw) = 4 (3 + 6 + 1)) still
    shortens."""
    from schedc.solvers.incumbent import sequential_orders
    from schedc.solvers.lns import Window, solve_window

    problem = Problem(p=3, m=4, mem=(2,), tb=2)
    plan = Plan(problem=problem, orders=sequential_orders(problem), source="sequential")
    span = int(plan.makespan * problem.time_scale)
    whole = solve_window(plan, Window(0, span + 1), time_limit=5)
    assert whole.optimal and whole.plan is not None and whole.plan.fits()
    assert whole.plan.makespan == whole.claimed == solve(problem, time_limit=5, workers=1).makespan < 40
    middle = solve_window(plan, Window(span // 3, 2 * span // 3), time_limit=5)
    assert middle.plan is not None and validate(problem, middle.plan.orders) == []
    assert middle.plan.makespan <= middle.claimed < plan.makespan == 40


def test_lns_windows_follow_the_plan_as_it_shortens():
    """Accepted windows shorten the plan: later windows must lie within the new length, not the old."""
    import itertools
    import random

    from schedc.solvers.incumbent import best_incumbent, sequential_orders
    from schedc.solvers.lns import _windows

    problem = Problem(p=4, m=32, v=2, mem=(2,), tf=1, tb=2, tw=1)  # 768 tasks: windows of about 600
    long = Plan(problem=problem, orders=sequential_orders(problem), source="sequential")
    short = best_incumbent(problem)
    current = [long]
    windows = _windows(lambda: current[0], random.Random(0))
    first = next(windows)
    assert first.t1 == long.makespan * problem.time_scale + 1 and first.t0 > 0
    current[0] = short
    end = short.makespan * problem.time_scale
    assert all(w.t0 < end for w in itertools.islice(windows, 200))  # each holds tasks of the new plan


def test_lns_improves_a_poor_incumbent_and_repeats_itself(repeatable):
    """From one-microbatch-at-a-time, within the cap; one worker and a seed: the same plan twice."""
    from schedc.solvers.backends import Budget
    from schedc.solvers.incumbent import sequential_orders
    from schedc.solvers.lns import lns_plan

    problem = Problem(p=3, m=6, v=2, mem=(Fraction(3, 2),), tf=1, tb=2, tw=1)
    poor = Plan(problem=problem, orders=sequential_orders(problem), source="sequential")
    budget = Budget(time_limit=1, workers=1, seed=3, progress=None, floor=lower_bound(problem))
    plan = lns_plan(poor, budget)
    assert plan.fits() and plan.source == "lns" and plan.makespan < poor.makespan
    assert validate(problem, plan.orders) == []
    assert lns_plan(poor, budget).orders == plan.orders


def test_a_task_budget_bounds_the_list_runs_without_the_clock():
    from schedc.solvers.list_portfolio import variants
    from schedc.solvers.list_scheduler import best_list_result

    problem = Problem(p=4, m=8, v=2, mem=(Fraction(3, 2),), tb=2)
    runs = variants(problem)
    one = best_list_result(problem, task_budget=0)
    assert one.variant == runs[0]
    two = best_list_result(problem, task_budget=2 * problem.num_tasks)
    assert two.variant in runs[:2] and two.makespan <= one.makespan
    assert best_list_result(problem, task_budget=len(runs) * problem.num_tasks).makespan == \
        best_list_result(problem).makespan
