# sed -i '93s/if n) >= self.allocating/if n) > self.allocating/' solvers/admission.py
# sed -i '96s/math.floor(min(caps))/math.floor(max(caps))/' solvers/list_portfolio.py
# sed -i '117s/\[\*DEEP_RUNS, \*allocating_runs(problem)\]/list(DEEP_RUNS)/' solvers/list_portfolio.py
# sed -i '198s/allocating_limit(variant.window))/None)/' solvers/list_scheduler.py
"""The list scheduler's 'aN' windows (at most N microbatches per rank with an F still to run there):
what they count, that every run stays valid within the caps, and the deep-stage plans they shorten
(``list_portfolio.ALLOCATING_RUNS``)."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schedc.errors import ProblemError
from schedc.problem import Problem
from schedc.solvers.admission import RankMemory
from schedc.solvers.list_portfolio import allocating_limit, allocating_runs, flight_limit, variants
from schedc.solvers.list_scheduler import best_list_result, run_rule, run_variant
from schedc.validate import validate


def test_an_allocating_window_is_named_a_and_a_count_of_at_least_one() -> None:
    assert allocating_limit("a3") == 3 and flight_limit("a3") is None
    assert allocating_limit("k3") is None and allocating_limit("a0") is None
    assert allocating_limit("none") is None
    with pytest.raises(ProblemError, match=r"unknown window 'a0'.*kN, aN \(N >= 1\)"):
        run_rule(Problem(p=2, m=4, v=3, mem=1), "zb", "a0")


def test_a_rank_admits_no_newcomer_while_n_microbatches_still_allocate() -> None:
    """Three stages (unit 1 each, a full activation 3), cap 9, 'banker', at most one allocating: after
    microbatch 0 enters, 1 may not, though the cap has room; once 0 has run its three F's it may."""
    memory = RankMemory(9, 1, 3, "banker", (0, 4, 8), 1, (), allocating=1)
    memory.allocate(0, True, 0)
    assert not memory.safe(1, True, 1)
    memory.allocate(0, False, 4)
    assert not memory.safe(1, True, 5)
    memory.allocate(0, False, 8)
    assert memory.safe(1, True, 9)
    memory.allocate(1, True, 9)
    assert not memory.safe(2, True, 10)


def _most_allocating_per_rank(problem: Problem, orders) -> int:
    """Per rank, the most microbatches that entered and had an F still to run there."""
    most = 0
    for order in orders:
        left: dict[int, int] = {}
        for action in order:
            if action.kind == "F":
                left[action.mb] = left.get(action.mb, problem.v) - 1
            most = max(most, sum(1 for n in left.values() if n > 0))
    return most


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(p=st.integers(1, 4), m=st.integers(1, 8), v=st.integers(3, 4),
       cap=st.sampled_from([1, Fraction(5, 4), 2, 3]), n=st.integers(1, 3),
       rule=st.sampled_from(["zb", "head", "ff", "lst-mb"]))
def test_every_allocating_window_is_valid_within_the_cap_and_keeps_its_count(p, m, v, cap, n, rule) -> None:
    """The window only holds entries back and never refuses one where nothing allocates, so the list
    scheduler's deadlock argument stands: every run completes, valid and within the cap."""
    problem = Problem(p=p, m=m, v=v, mem=cap)
    for admission in ("banker", "due", "forecast"):
        result = run_rule(problem, rule, f"a{n}", admission)
        assert validate(problem, result.orders) == []
        assert _most_allocating_per_rank(problem, result.orders) <= n


def test_the_allocating_runs_take_the_smallest_cap_and_one_less() -> None:
    names = [str(v) for v in allocating_runs(Problem(p=4, m=8, v=3, mem=(Fraction(7, 2), 5, 5, 5)))]
    assert names == ["zb/a3/banker", "head/a3/due", "ff/a3/forecast", "zb/a2/banker"]
    assert [str(v) for v in allocating_runs(Problem(p=4, m=8, v=3, mem=Fraction(3, 2)))][-1] == "zb/a1/banker"
    assert allocating_runs(Problem(p=4, m=8, v=3)) == []
    deep = Problem(p=4, m=8, v=3, mem=2)
    assert set(allocating_runs(deep)) <= set(variants(deep))
    two = Problem(p=4, m=8, v=2, mem=2)  # picked on three and four stages per rank only
    assert not set(allocating_runs(two)) & set(variants(two))


def test_three_allocating_at_most_shorten_a_three_stage_pipeline_under_cap_four() -> None:
    """p=8 m=32 v=3 cap 4 (equal costs): the portfolio before the allocating runs ended at 338/3
    (zb/none/lookahead); at most three microbatches still allocating per rank gives 319/3, its best."""
    problem = Problem(p=8, m=32, v=3, mem=4)
    allocating = allocating_runs(problem)
    before = min(run_variant(problem, v).makespan for v in variants(problem) if v not in allocating)
    assert before == Fraction(338, 3)
    result = run_rule(problem, "zb", "a3", "banker")
    assert validate(problem, result.orders) == []
    assert result.makespan == Fraction(319, 3) == best_list_result(problem).makespan
