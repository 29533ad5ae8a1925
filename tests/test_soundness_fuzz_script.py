# sed -i '82s/problem.num_tasks <= MAX_TASKS/True/' benchmarks/soundness_fuzz.py
# sed -i '156s/= self.saved/= (9, 9, 9)/' benchmarks/soundness_fuzz.py
# sed -i '182s/phase)/lambda *a, **k: None)/' benchmarks/soundness_fuzz.py
# sed -i '191s/event.source if raised else "analytic"/event.source/' benchmarks/soundness_fuzz.py
# sed -i '230s/moved.fits() and //' benchmarks/soundness_fuzz.py
# sed -i '239s/if not plan.fits()/if 0/' benchmarks/soundness_fuzz.py
# sed -i '244s/bound > least/bound < 0/' benchmarks/soundness_fuzz.py
# sed -i '246s/plan.value != least/plan.value < least/' benchmarks/soundness_fuzz.py
# sed -i '249s/b.makespan < plan.makespan/b.makespan < 0/' benchmarks/soundness_fuzz.py
"""benchmarks/soundness_fuzz.py: its random problems, the claims it calls broken, its moves, and the
switches it restores."""

from __future__ import annotations

import random
from dataclasses import replace
from fractions import Fraction

from schedc.baselines import baseline_plan
from schedc.problem import Problem
from schedc.solvers import bound_phases, portfolio, span_bound
from schedc.solvers.portfolio import solve
from tests.benchmark_scripts import load_benchmark


def test_its_problems_are_small_and_varied():
    bench = load_benchmark("soundness_fuzz")
    rng = random.Random(0)
    problems = [bench.random_problem(rng) for _ in range(60)]
    assert all(problem.num_tasks <= bench.MAX_TASKS for problem in problems)
    assert {problem.placement for problem in problems} == {"looped", "vshape"}
    assert {problem.v for problem in problems} == {1, 2}
    assert {problem.split for problem in problems} == {True, False}
    assert any(problem.stage_costs for problem in problems)
    assert any(problem.m >= 8 * problem.p for problem in problems)
    capped = [problem for problem in problems if problem.binding_caps[0] is not None]
    assert len(capped) > 30 and any(None in problem.mem for problem in problems)


def test_a_true_solve_breaks_nothing():
    bench = load_benchmark("soundness_fuzz")
    problem = Problem(p=2, m=4, mem=(1,))
    found = bench.Found()
    bench.solve_run(problem, bench.Run("makespan", 1.0, 1, 0), found)
    assert found.plans[0].status == "optimal" and found.rows[0]["raised_by"][0] == "analytic"
    assert bench.broken_claims(problem, found, [baseline_plan("1f1b", problem)]) == []


def test_a_bound_above_a_plan_and_a_false_optimal_are_broken():
    bench = load_benchmark("soundness_fuzz")
    problem = Problem(p=2, m=4)
    found = bench.Found()
    bench.solve_run(problem, bench.Run("makespan", 1.0, 1, 0), found)
    best = found.plans[0].makespan
    found.bounds.append(("makespan", best + 1, "made up"))
    errors = bench.broken_claims(problem, found, [])
    assert errors == [f"made up: bound {best + 1} above a plan's makespan {best}"]
    gpipe = baseline_plan("gpipe", problem)  # slower than the solver's plan, and claimed optimal
    found.plans.append(replace(gpipe, status="optimal", lower_bound=gpipe.makespan))
    errors = bench.broken_claims(problem, found, [baseline_plan("zb-h1", problem)])
    assert f"gpipe: optimal at {gpipe.makespan}, but a plan has {best}" in errors
    assert any(error.startswith("gpipe (makespan): lower_bound") for error in errors)  # validate's own
    assert f"gpipe: makespan {gpipe.makespan} slower than fitting zb-h1" in errors


def test_a_plan_over_its_cap_is_broken():
    bench = load_benchmark("soundness_fuzz")
    problem = Problem(p=2, m=4, mem=(1,))
    gpipe = baseline_plan("gpipe", problem)  # holds 4 microbatches' activations
    errors = bench.broken_claims(problem, bench.Found(plans=[gpipe]), [])
    assert errors[-1] == "gpipe (makespan) exceeds its cap"
    assert "activation memory 2 exceeds the cap 1" in errors[0]  # validate's line


def test_moves_keep_a_fitting_plan_no_worse():
    bench = load_benchmark("soundness_fuzz")
    problem = Problem(p=3, m=6, mem=(2,), tb=2)
    start = solve(problem, time_limit=0.5, workers=1, backend="list")
    moved = bench.random_moves(start, "span", random.Random(1), moves=200)
    assert moved.fits() and moved.timeline.max_span <= start.timeline.max_span
    assert moved.problem == problem and [set(o) for o in moved.orders] == [set(o) for o in start.orders]


def test_the_switches_are_restored():
    bench = load_benchmark("soundness_fuzz")
    def switches() -> tuple[float, float, float]:
        return bound_phases.BLOCK_MIN_SECONDS, portfolio.PROBE_MIN_SECONDS, span_bound.FIRST_RANK_MIN_SECONDS

    saved = switches()
    phases = [getattr(module, name) for module, name in bench.PHASES]
    ran: dict[str, int] = {}
    try:
        with bench.phases_counted(ran), bench.forced_phases():
            assert all(now < before for now, before in zip(switches(), saved, strict=True))
            problem = Problem(p=4, m=8, v=2, mem=(Fraction(3, 2),), tb=2)  # not solved by its list plan
            solve(problem, time_limit=1.0, workers=2, objective="span")  # rank 0's end needs 0.5 s unforced
            raise RuntimeError
    except RuntimeError:
        pass
    assert switches() == saved
    assert [getattr(module, name) for module, name in bench.PHASES] == phases
    assert ran.get("first_rank_floor") == 1
