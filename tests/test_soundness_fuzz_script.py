# sed -i '50s/else 2 \* problem.p - 1 - stage/else stage - problem.p/' benchmarks/independent_replay.py
# sed -i '60s/"B": tb + tw/"B": tb/' benchmarks/independent_replay.py
# sed -i '77s/rank_of\[need\[1\]\] != rank_of\[s\]/False/' benchmarks/independent_replay.py
# sed -i '87s/max(peak, held)/held/' benchmarks/independent_replay.py
# sed -i '284s/plan.problem.split and //' benchmarks/soundness_fuzz.py
# sed -i '288s/if figures == /if True or figures == /' benchmarks/soundness_fuzz.py
# sed -i '301s/if (error := replay_differs(plan))/if 0/' benchmarks/soundness_fuzz.py
# sed -i '103s/min_tasks <= //' benchmarks/soundness_fuzz.py
# sed -i '159s/if chain_applies(problem):/if 0:/' benchmarks/soundness_fuzz.py
# sed -i '103s/problem.num_tasks <= max_tasks/True/' benchmarks/soundness_fuzz.py
# sed -i '154s/Run("span", 2.0, 2, seed + 2),/\\/' benchmarks/soundness_fuzz.py
# sed -i '187s/value)/None)/' benchmarks/soundness_fuzz.py
# sed -i '193s/block relaxation/rank relaxation/' benchmarks/soundness_fuzz.py
# sed -i '194s/kwargs.get("first", 0)/0/' benchmarks/soundness_fuzz.py
# sed -i '222s/solver)/None)/' benchmarks/soundness_fuzz.py
# sed -i '232s/event.source if raised else "analytic"/event.source/' benchmarks/soundness_fuzz.py
# sed -i '240s/found.errors.append/print/' benchmarks/soundness_fuzz.py
# sed -i '244s/found.bounds += /_ = /' benchmarks/soundness_fuzz.py
# sed -i '276s/moved.fits() and //' benchmarks/soundness_fuzz.py
# sed -i '299s/if not plan.fits()/if 0/' benchmarks/soundness_fuzz.py
# sed -i '300s/if plan.fits()//' benchmarks/soundness_fuzz.py
# sed -i '300s/ + found.moved//' benchmarks/soundness_fuzz.py
# sed -i '305s/bound > least/bound < 0/' benchmarks/soundness_fuzz.py
# sed -i '307s/plan.value != least/plan.value < least/' benchmarks/soundness_fuzz.py
# sed -i '310s/b.makespan < plan.makespan/b.makespan < 0/' benchmarks/soundness_fuzz.py
# sed -i '378s/set(run\["raised_by"\])/run["raised_by"]/' benchmarks/soundness_fuzz.py
# sed -i '339s/            < min/            <= min/' benchmarks/soundness_fuzz.py
# sed -i '384s/objective in row.get("moves_beat", ())/1/' benchmarks/soundness_fuzz.py
"""benchmarks/soundness_fuzz.py: its random problems and runs, the claims it calls broken, its moves,
the counts of what worked, and the switches it restores."""

from __future__ import annotations

import random
from dataclasses import replace
from fractions import Fraction

import pytest
from hypothesis import given, settings

from schedc.actions import Action
from schedc.baselines import applicable, baseline_plan
from schedc.errors import ScheduleError
from schedc.plan import Plan
from schedc.problem import Problem
from schedc.solvers import bound_phases, portfolio, relaxation
from schedc.solvers.portfolio import solve
from tests.benchmark_scripts import load_benchmark
from tests.strategies import problems


@pytest.fixture(scope="module")
def bench():
    return load_benchmark("soundness_fuzz")


def test_its_problems_are_small_and_varied(bench):
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
    larger = [bench.random_problem(rng, max_tasks=2000).num_tasks for _ in range(60)]
    assert max(larger) <= 2000 and sum(tasks > bench.MAX_TASKS for tasks in larger) >= 5
    band = [bench.random_problem(rng, 2000, 801).num_tasks for _ in range(10)]
    assert all(801 <= tasks <= 2000 for tasks in band) and bench.LARGEST_DRAWN in larger + band
    with pytest.raises(ValueError, match="no problem of 1537 to 3000 tasks in 10000 draws"):
        bench.random_problem(rng, 3000, bench.LARGEST_DRAWN + 1)


def test_its_runs_take_both_objectives_worker_counts_and_a_forced_run(bench):
    problem = Problem(p=4, m=8, v=2, mem=(2,))
    runs = bench.runs_for(problem, random.Random(3), long=False)
    assert {(run.objective, run.workers) for run in runs} >= {("makespan", 1), ("makespan", 2), ("span", 1),
                                                              ("span", 2)}
    assert sum(bool(run.forced) for run in runs) == 1 and max(run.limit for run in runs) < 10
    long = bench.runs_for(problem, random.Random(3), long=True)
    assert long[:-1] == runs and long[-1].objective == "makespan" and long[-1].limit == 45
    chained = bench.runs_for(Problem(p=2, m=16, mem=(1,)), random.Random(3), long=False)
    assert len(chained) == len(runs) + 1 and chained[:-1] == runs and chained[-1].backend == "lns"


def test_a_true_solve_breaks_nothing(bench):
    problem = Problem(p=2, m=4, mem=(1,))
    found = bench.Found()
    bench.solve_run(problem, bench.Run("makespan", 1.0, 1, 0), found)
    assert found.plans[0].status == "optimal" and found.rows[0]["raised_by"][0] == "analytic"
    assert bench.broken_claims(problem, found, [baseline_plan("1f1b", problem)]) == []


def test_a_bound_above_a_plan_and_a_false_optimal_are_broken(bench):
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


def test_span_claims_are_checked_against_every_plan_s_span(bench):
    problem = Problem(p=2, m=4)
    gpipe = baseline_plan("gpipe", problem)
    span = replace(gpipe, objective="span", status="optimal", lower_bound=gpipe.timeline.max_span)
    found = bench.Found(plans=[span], bounds=[("span", span.lower_bound, "final span")])
    least = min(baseline_plan("zb-h1", problem).timeline.max_span, gpipe.timeline.max_span)
    assert least < span.value  # zb-h1's span beats gpipe's
    errors = bench.broken_claims(problem, found, [baseline_plan("zb-h1", problem)])
    assert f"final span: bound {span.value} above a plan's span {least}" in errors
    assert f"gpipe: optimal at {span.value}, but a plan has {least}" in errors


def test_a_moved_plan_disproves_but_claims_nothing(bench):
    problem = Problem(p=2, m=4)
    zb = baseline_plan("zb-h1", problem)
    found = bench.Found(moved=[replace(baseline_plan("gpipe", problem), objective="makespan")],
                        bounds=[("makespan", zb.makespan + 1, "made up")])
    found.moved.append(zb)
    errors = bench.broken_claims(problem, found, [])
    assert errors == [f"made up: bound {zb.makespan + 1} above a plan's makespan {zb.makespan}"]


def test_a_baseline_over_the_cap_disproves_nothing(bench):
    problem = Problem(p=2, m=4, mem=(1,))
    found = bench.Found()
    bench.solve_run(problem, bench.Run("makespan", 1.0, 1, 0), found)
    gpipe = baseline_plan("gpipe", problem)  # faster than any plan within the cap, and over it
    assert gpipe.makespan < found.plans[0].makespan and not gpipe.fits()
    assert bench.broken_claims(problem, found, [gpipe]) == []


def test_a_plan_over_its_cap_is_broken(bench):
    problem = Problem(p=2, m=4, mem=(1,))
    gpipe = baseline_plan("gpipe", problem)  # holds 4 microbatches' activations
    errors = bench.broken_claims(problem, bench.Found(plans=[gpipe]), [])
    assert errors[-1] == "gpipe (makespan) exceeds its cap"
    assert "activation memory 2 exceeds the cap 1" in errors[0]  # validate's line


def test_an_announced_bound_is_checked_and_a_raising_solve_is_reported(bench, monkeypatch):
    problem = Problem(p=2, m=4)
    plan = solve(problem, time_limit=1.0, workers=1)

    def announcing(problem, progress, **kwargs):
        from schedc.solvers.progress import Progress

        progress(Progress(plan.value, Fraction(1), 0.0, "list"))
        progress(Progress(plan.value, plan.value + 2, 0.1, "liar"))
        return plan

    monkeypatch.setattr(bench, "solve", announcing)
    found = bench.Found()
    bench.solve_run(problem, bench.Run("makespan", 1.0, 1, 0), found)
    assert found.rows[0]["raised_by"] == ["analytic", "liar"]
    assert f"liar: bound {plan.value + 2} above a plan's makespan {plan.value}" in \
        bench.broken_claims(problem, found, [])

    def raising(problem, progress, **kwargs):
        raise ScheduleError("internal error: lower bound 15 exceeds 14, a valid plan's value")

    monkeypatch.setattr(bench, "solve", raising)
    bench.solve_run(problem, bench.Run("span", 2.0, 2, 5), found)
    assert found.errors == [f"{bench.Run('span', 2.0, 2, 5)}: ScheduleError: internal error: lower bound 15 "
                            "exceeds 14, a valid plan's value"]
    assert len(found.rows) == 1


def test_moves_keep_a_fitting_plan_no_worse(bench):
    problem = Problem(p=3, m=6, mem=(2,), tb=2)
    start = solve(problem, time_limit=0.5, workers=1, backend="list")
    moved = bench.random_moves(start, "span", random.Random(1), moves=200)
    assert moved.fits() and moved.timeline.max_span <= start.timeline.max_span
    assert moved.problem == problem and [set(o) for o in moved.orders] == [set(o) for o in start.orders]


def _relax_and_probes(share: portfolio.Shares) -> tuple[float, float]:
    return share.relax, share.probes


def test_forced_runs_leave_the_phases_time_on_small_models(bench):
    problem = Problem(p=4, m=12, v=2, mem=(Fraction(3, 2),), tb=2)  # 288 tasks: a whole search, unforced
    assert _relax_and_probes(portfolio._shares(problem, "cp-sat", "makespan", 2, 3.5)) == (0, 0)
    assert not bound_phases.block_applies(problem, 0.5)
    with bench.forced_phases():
        relax, probes = _relax_and_probes(portfolio._shares(problem, "cp-sat", "makespan", 2, 3.5))
        assert relax == probes == pytest.approx(0.35) and bound_phases.block_applies(problem, 0.5)
    with bench.forced_phases(suffixes=True):  # 72 tasks per rank, above the 60 the block needs
        assert not bound_phases.block_applies(problem, 0.5)
    assert _relax_and_probes(portfolio._shares(problem, "cp-sat", "makespan", 2, 3.5)) == (0, 0)  # restored
    assert bound_phases.BLOCK_MIN_SECONDS == 8 and bound_phases.RELAXATION_MAX_TASKS == 400


def test_the_solves_are_counted_by_what_they_relax(bench):
    problem = Problem(p=4, m=4, v=2, mem=(Fraction(3, 2),))
    ran: dict[str, int] = {}
    with bench.work_counted(ran):
        relaxation.relaxed_rank_bound(problem, 0, time_limit=0.2)
        relaxation.relaxed_rank_bound(problem, 1, time_limit=0.2, first=2)
        relaxation.relaxed_rank_bound(problem, (0, 1, 2), time_limit=0.2)
        relaxation.relaxed_rank_bound(problem, rank=(0, 3), time_limit=0.2)
    assert ran == {"rank relaxation": 1, "rank relaxation, suffix": 1, "block relaxation": 2}


def test_the_switches_and_solvers_are_restored(bench):
    switches = bench.FORCED + bench.SUFFIXES
    saved = [getattr(module, name) for module, name, _ in switches]
    solvers = [getattr(module, name) for module, name, _ in bench.WORK]
    ran: dict[str, int] = {}
    with pytest.raises(RuntimeError), bench.work_counted(ran), bench.forced_phases(suffixes=True):
        assert [getattr(module, name) for module, name, _ in switches] == [value for _, _, value in switches]
        now = [getattr(module, name) for module, name, _ in bench.WORK]
        assert all(mine is not theirs for mine, theirs in zip(now, solvers, strict=True))
        raise RuntimeError
    assert [getattr(module, name) for module, name, _ in switches] == saved
    assert [getattr(module, name) for module, name, _ in bench.WORK] == solvers


def test_the_summary_counts_runs_per_phase(bench):
    raised = ["analytic", "relaxation", "relaxation"]
    rows = [{"errors": [], "runs": [{"status": "optimal", "raised_by": raised, "worked": {"probe": 3}}]},
            {"errors": ["x"], "runs": [{"status": "feasible", "raised_by": ["analytic"], "worked": {}}]}]
    summary = bench._summary(rows, 1.23)
    assert summary == {"problems": 2, "runs": 2, "optimal": 1, "broken": 1, "seconds": 1.2,
                       "moves_beat_solves": {"makespan": 0, "span": 0}, "runs_where_worked": {"probe": 1},
                       "runs_where_raised_by": {"analytic": 2, "relaxation": 1}}


def test_moves_that_beat_every_solve_are_recorded_per_objective(bench):
    problem = Problem(p=3, m=6)
    slow, fast = baseline_plan("gpipe", problem), baseline_plan("zb-h1", problem)
    assert fast.makespan < slow.makespan and fast.timeline.max_span < slow.timeline.max_span
    assert bench.moves_beat(bench.Found(plans=[slow], moved=[slow, fast])) == ["makespan", "span"]
    assert bench.moves_beat(bench.Found(plans=[slow, fast], moved=[fast])) == []
    assert bench.moves_beat(bench.Found(plans=[slow])) == []
    rows = [{"errors": [], "runs": [], "moves_beat": ["makespan", "span"]}, {"errors": [], "runs": []}]
    assert bench._summary(rows, 0)["moves_beat_solves"] == {"makespan": 1, "span": 1}


@settings(max_examples=60, deadline=None)
@given(problems(max_p=4, max_m=6))
def test_the_independent_replay_agrees_with_the_simulator(problem):
    replay = load_benchmark("independent_replay").replay
    for name in applicable(problem):
        plan = baseline_plan(name, problem)
        if problem.split and any(action.kind == "B" for order in plan.orders for action in order):
            continue
        timeline = plan.timeline
        assert replay(problem, plan.orders) == (timeline.makespan, timeline.spans, timeline.peak_mem), name


def test_the_independent_replay_sees_a_deadlock_and_a_wrong_figure(bench, monkeypatch):
    problem = Problem(p=2, m=2, comm=Fraction(1, 2), mem=(2,))
    replay = load_benchmark("independent_replay").replay
    zb, gpipe = baseline_plan("zb-h1", problem), baseline_plan("gpipe", problem)
    with pytest.raises(ValueError, match="deadlock"):
        replay(problem, (tuple(reversed(zb.orders[0])), zb.orders[1]))
    assert bench.replay_differs(zb) is None and bench.replay_differs(gpipe) is None
    fused = Plan(problem=problem, orders=[[a if a.kind == "F" else Action("B", a.stage, a.mb)
                                           for a in order if a.kind != "W"] for order in zb.orders],
                 source="fused")
    wrong = replay(problem, gpipe.orders)
    monkeypatch.setattr(bench, "replay", lambda problem, orders: wrong)
    assert zb.makespan != gpipe.makespan and bench.replay_differs(fused) is None  # fused: not modelled
    line = bench.replay_differs(zb)
    assert line.startswith(f"zb-h1 (makespan): the independent replay gives makespan {gpipe.makespan}, spans")
    assert line.endswith(f"the simulator {zb.makespan}, {[str(s) for s in zb.timeline.spans]}, "
                         f"{[str(p) for p in zb.timeline.peak_mem]}")
    assert bench.broken_claims(problem, bench.Found(plans=[zb]), []) == [line]
    unsplit = baseline_plan("1f1b", replace(problem, split=False))  # its Bs are not fused: replayed
    assert bench.replay_differs(unsplit).startswith("1f1b (makespan): the independent replay gives")
