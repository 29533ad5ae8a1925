# sed -i '162s/math.floor(max(caps)/math.ceil(max(caps)/' solvers/list_portfolio.py
# sed -i '167s/counts\[:1\]/counts[-1:]/' solvers/list_portfolio.py
# sed -i '163s/max(1, FLIGHT_TASK_RUNS/max(2, FLIGHT_TASK_RUNS/' solvers/list_portfolio.py
"""The list scheduler: always valid and within caps >= 1, replayed exactly, and competitive."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import HealthCheck, given, settings

from schedc.baselines import BASELINES, applicable
from schedc.errors import InfeasibleError, ProblemError
from schedc.problem import Problem, StageCost
from schedc.simulate import simulate
from schedc.solvers.admission import ADMISSIONS
from schedc.solvers.bounds import lower_bound
from schedc.solvers.list_portfolio import FLIGHT_RUNS, FLIGHT_TASK_RUNS, flight_counts, variants
from schedc.solvers.list_scheduler import (
    RULES,
    best_list_result,
    best_list_schedule,
    list_schedule,
    run_rule,
    run_variant,
)
from schedc.validate import validate
from tests.strategies import problems

FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FAST
@given(problems())
def test_every_rule_is_valid_within_caps_and_replays_exactly(problem: Problem) -> None:
    for rule in RULES:
        result = run_rule(problem, rule)
        assert validate(problem, result.orders) == []
        timeline = simulate(problem, result.orders)
        assert timeline.makespan == result.makespan
        assert timeline.max_span == result.max_span


@settings(FAST, max_examples=15)  # each example runs every variant four times over (13 s at 25)
@given(problems(max_p=4, max_m=8))
def test_every_variant_is_valid_and_the_best_is_no_worse_than_any(problem: Problem) -> None:
    runs = [run_variant(problem, v) for v in variants(problem, thorough=True)]
    for run in runs:
        assert validate(problem, run.orders) == []
    best = best_list_result(problem, thorough=True)
    assert best.makespan == min(run.makespan for run in runs)
    assert best_list_result(problem).makespan >= best.makespan  # the portfolio alone
    span = best_list_result(problem, "span", thorough=True)
    assert span.max_span == min(run.max_span for run in runs)
    assert simulate(problem, best_list_schedule(problem)).makespan == best_list_result(problem).makespan


@pytest.mark.parametrize("p", [2, 4, 8])
@pytest.mark.parametrize("m_per_p", [1, 2, 4])
@pytest.mark.parametrize("split", [True, False])
def test_matches_or_beats_every_baseline_without_cap(p: int, m_per_p: int, split: bool) -> None:
    problem = Problem(p=p, m=m_per_p * p, split=split)
    mine = simulate(problem, best_list_schedule(problem)).makespan
    for name in applicable(problem):
        assert mine <= simulate(problem, BASELINES[name].build(problem)).makespan, name


@pytest.mark.parametrize("cap", [1, 2, Fraction(5, 2), 4, None])
@pytest.mark.parametrize("v", [1, 2])
@pytest.mark.parametrize("tb", [1, 2])
def test_beats_every_baseline_that_fits_the_cap(cap: Fraction | None, v: int, tb: int) -> None:
    problem = Problem(p=4, m=8, v=v, mem=() if cap is None else cap, comm=Fraction(1, 2), tb=tb)
    mine = simulate(problem, best_list_schedule(problem))
    assert cap is None or max(mine.peak_mem) <= cap
    for name in applicable(problem):
        theirs = simulate(problem, BASELINES[name].build(problem))
        if cap is None or max(theirs.peak_mem) <= cap:
            assert mine.makespan <= theirs.makespan, name


def test_caps_below_one_activation_are_infeasible() -> None:
    with pytest.raises(InfeasibleError, match="rank 0"):
        list_schedule(Problem(p=2, m=4, v=2, mem=Fraction(3, 4)))


def test_unknown_rule_and_objective_are_one_line_errors() -> None:
    problem = Problem(p=2, m=2)
    with pytest.raises(ProblemError, match="unknown list-scheduling rule"):
        list_schedule(problem, "nope")
    with pytest.raises(ProblemError, match="does not apply"):
        list_schedule(problem, "ref:zb-v")
    with pytest.raises(ProblemError, match="objective"):
        best_list_schedule(problem, "latency")


def test_a_spent_time_budget_still_returns_one_valid_schedule() -> None:
    problem = Problem(p=4, m=8, v=2, mem=1)
    assert validate(problem, best_list_schedule(problem, time_budget=0)) == []


def test_tight_cap_keeps_the_level_at_the_cap_exactly() -> None:
    """At the smallest feasible cap the scheduler still finishes (deadlock-free) and touches the cap."""
    problem = Problem(p=4, m=16, v=2, placement="vshape", mem=1, comm=1, tf=2, tb=3, tw=1)
    for rule in RULES:
        assert max(simulate(problem, list_schedule(problem, rule)).peak_mem) == 1


@pytest.mark.parametrize("admission", ADMISSIONS)
def test_every_admission_policy_fits_the_smallest_cap_with_two_stages(admission: str) -> None:
    problem = Problem(p=4, m=12, v=2, mem=1, tf=1, tb=2, tw=1, comm=Fraction(1, 2))
    result = run_rule(problem, "zb", "none", admission)
    assert validate(problem, result.orders) == []
    assert max(simulate(problem, result.orders).peak_mem) == 1


def test_admission_that_keeps_room_beats_the_plain_bankers_test_on_vshape() -> None:
    """A newcomer that takes the memory a microbatch in flight needs on its second stage stalls the
    pipeline; keeping room for it ('due') or projecting the level ('forecast') shortens the step."""
    problem = Problem(p=8, m=16, v=2, placement="vshape", mem=2)
    banker = run_rule(problem, "zb", "none", "banker").makespan
    assert run_rule(problem, "zb", "none", "due").makespan < banker
    due = run_rule(problem, "ff", "none", "due").makespan
    assert run_rule(problem, "ff", "none", "forecast").makespan < due


def test_a_reference_rule_reproduces_its_baseline_where_the_greedy_rules_lose() -> None:
    """Interleaved 1F1B's pattern with a heavy last stage (the greedy rules reach 85/2 here): the
    reference rule, the baseline's start times as priorities, finds it again."""
    costs = tuple(StageCost(k, 2 * k, 0) for k in [Fraction(1, 2)] * 7 + [Fraction(1)])
    problem = Problem(p=4, m=8, v=2, split=False, stage_costs=costs)
    baseline = simulate(problem, BASELINES["interleaved-1f1b"].build(problem)).makespan
    assert run_rule(problem, "ref:interleaved-1f1b").makespan <= baseline
    assert min(run_rule(problem, rule).makespan for rule in RULES) > baseline


def _most_in_flight_per_rank(problem: Problem, orders) -> int:
    """Per rank, the most microbatches that entered (first F there) and still hold activation memory."""
    most = 0
    for order in orders:
        live: dict[int, Fraction] = {}
        for action in order:
            live[action.mb] = live.get(action.mb, Fraction(0)) + problem.mem_delta(action.kind)
            most = max(most, sum(1 for held in live.values() if held > 0))
            live = {mb: held for mb, held in live.items() if held > 0}
    return most


@settings(FAST, max_examples=30)
@given(problems(max_p=4, max_m=8))
def test_an_in_flight_window_keeps_its_count_and_the_cap(problem: Problem) -> None:
    for n in (1, 2, 3):
        result = run_rule(problem, "ff", f"k{n}")
        assert validate(problem, result.orders) == []
        assert _most_in_flight_per_rank(problem, result.orders) <= n


def test_two_in_flight_keep_a_tight_two_stage_pipeline_fed() -> None:
    """Looped v = 2 under a cap of three stage activations: every admission policy lets a third
    microbatch in while two are in flight, and its activation starves their second-stage F's. At
    most two in flight per rank ('k2') is the solver's own pattern here (CP-SAT: 814, bound 810.5)."""
    problem = Problem(p=16, m=16, v=2, mem=Fraction(3, 2), comm=Fraction(1, 2), tf=1, tb=2, tw=1, split=False)
    portfolio_before = min(run_rule(problem, rule, "none", admission).makespan
                           for rule in RULES for admission in ADMISSIONS)
    k2 = run_rule(problem, "ff", "k2").makespan
    assert lower_bound(problem) <= k2 < portfolio_before
    assert best_list_result(problem).makespan <= k2


def test_an_unknown_window_is_a_one_line_error() -> None:
    with pytest.raises(ProblemError, match="unknown window 'k0'"):
        run_rule(Problem(p=2, m=4, v=2, mem=1), "ff", "k0")


def test_in_flight_counts_cover_the_cap_and_thin_out_on_large_problems() -> None:
    assert flight_counts(Problem(p=4, m=16, v=1, mem=2)) == []  # one stage per rank: the cap is the count
    assert flight_counts(Problem(p=4, m=16, v=2)) == []  # no cap
    assert flight_counts(Problem(p=4, m=16, v=2, mem=Fraction(5, 2))) == [2, 3, 4, 5]
    assert flight_counts(Problem(p=4, m=4, v=2, mem=Fraction(7, 2))) == [2, 3]  # below m
    assert flight_counts(Problem(p=4, m=4, v=2, mem=4)) == []  # a cap of m never binds
    # 5/4 and 7/4 full activations hold 2.5 and 3.5 stage activations: whole ones only
    assert flight_counts(Problem(p=4, m=16, v=2, mem=Fraction(5, 4))) == [2]
    assert flight_counts(Problem(p=4, m=16, v=2, mem=Fraction(7, 4))) == [2, 3]
    large = Problem(p=32, m=256, v=2, mem=32)
    counts = flight_counts(large)
    assert counts[0] == 2 and counts[-1] == 64 and counts == sorted(set(counts))
    assert len(counts) * len(FLIGHT_RUNS) * large.num_tasks <= FLIGHT_TASK_RUNS
    larger = Problem(p=32, m=1024, v=2, mem=32)  # too large for two counts: the smallest alone
    assert 2 * len(FLIGHT_RUNS) * larger.num_tasks > FLIGHT_TASK_RUNS >= len(FLIGHT_RUNS) * larger.num_tasks
    assert flight_counts(larger) == [2]


@pytest.mark.parametrize(("cap", "admitted"), [(3, False), (4, True)])
def test_room_admits_a_newcomer_only_with_room_for_its_own_and_one_later_forward(cap, admitted) -> None:
    """'room' (``admission``'s module doc) on two stages per rank: with microbatch 0's two activations
    held, a new microbatch needs its entry activation and room for its later F: 2 + 1 + 1 units, where
    the banker's test admits it at 3 (room without the newcomer's own unit went unnoticed)."""
    from schedc.solvers.admission import RankMemory

    for policy in ("room", "banker"):
        memory = RankMemory(cap=cap, unit=1, v=2, policy=policy, gaps=(0, 1), slots=1)
        memory.allocate(0, True, 0)
        memory.allocate(0, False, 1)
        assert memory.safe(1, True, 1) is (admitted or policy == "banker")
