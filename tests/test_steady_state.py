"""benchmarks/steady_state.py: the modulo model's patterns unroll to valid plans within the cap, and
its periods agree with what can be argued by hand (the README quotes them)."""

from __future__ import annotations

from fractions import Fraction

import pytest

from schedc.problem import Problem
from tests.benchmark_scripts import load_benchmark


@pytest.fixture(scope="module")
def steady():
    return load_benchmark("steady_state")


def _period(steady, problem: Problem, k: int = 1) -> tuple[Fraction, object]:
    period, starts, _ = steady.smallest_period(problem, k, time_limit=10, workers=1)
    return Fraction(period, problem.time_scale * k), steady.unroll(problem, k, period, starts)


def test_uncapped_period_is_the_busiest_ranks_work(steady):
    problem = Problem(p=4, m=8, tf=1, tb=2, tw=1)
    period, plan = _period(steady, problem)
    assert period == 4  # one F, I and W per microbatch on every rank, nothing else limits
    assert plan.violations() == [] and plan.fits()


def test_a_huge_cap_is_no_cap_and_a_cap_of_m_still_binds_the_stream(steady):
    """A cap of 1e19 (a byte budget over a unit of a few bytes) went into the cumulative's capacity
    and overflowed CP-SAT's 64-bit integers; a cap of m or more, which never binds a finite plan,
    still binds the endless stream the modulo model repeats (cap 2 at m = 2: 7, not the uncapped 4)."""
    problem = Problem(p=4, m=8, tf=1, tb=2, tw=1, mem=(10**19,))
    period, plan = _period(steady, problem)
    assert period == 4 and plan.violations() == []
    period, _ = _period(steady, Problem(p=4, m=2, tf=1, tb=2, tw=1, mem=(2,)))
    assert period == 7


def test_cap_one_serialises_the_round_trip(steady):
    # v = 1, cap 1: microbatch i's W on rank 0 ends before F(0, i+1) starts, so the period is rank 0's
    # round trip: 4 forwards, 4 input gradients, then its W (tf = tb = tw = 1)
    problem = Problem(p=4, m=8, mem=(1,))
    period, plan = _period(steady, problem)
    assert period == 4 + 4 + 1
    assert plan.fits() and plan.timeline.peak_mem[0] == 1


def test_two_microbatch_pattern_from_a_repeated_one(steady):
    problem = Problem(p=2, m=6, v=2, placement="vshape", mem=(Fraction(3, 2),), tf=1, tb=2, tw=1)
    period, starts, _ = steady.smallest_period(problem, 1, time_limit=10, workers=1)
    repeated = steady.repeat(starts, 2, period)
    same = steady.unroll(problem, 1, period, starts).orders
    assert steady.unroll(problem, 2, 2 * period, repeated).orders == same
    two, best, _ = steady.smallest_period(problem, 2, time_limit=10, workers=1, known=(2 * period, repeated))
    assert two <= 2 * period
    plan = steady.unroll(problem, 2, two, best)
    assert plan.violations() == [] and plan.fits()
