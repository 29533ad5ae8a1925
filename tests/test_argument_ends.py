"""solve()'s own argument checks accept the ends of their ranges: CP-SAT takes 10,000 workers (its own
limit) and a seed of -2**31 or 2**31 - 1; one past each end is a ProblemError naming the argument.
A bool is no count nor seed (True would run one worker, or seed 1, without a word). (The CLI
checks its flags first, so only a library caller reaches these.)"""

from __future__ import annotations

import pytest

from schedc.errors import ArgumentError, ProblemError
from schedc.problem import Problem
from schedc.solvers.arguments import check_arguments

PROBLEM = Problem(p=2, m=2)


def test_the_ends_of_each_range_are_accepted():
    assert check_arguments(PROBLEM, 1e9, 10_000, -2**31, None) == (1e9, 10_000)
    assert check_arguments(PROBLEM, 0.001, 1, 2**31 - 1, None) == (0.001, 1)


@pytest.mark.parametrize(("time_limit", "workers", "seed", "named"), [
    (1, 10_001, 0, "workers"), (1, 0, 0, "workers"), (1, 1, 2**31, "seed"), (1, 1, -2**31 - 1, "seed"),
    (1e9 * 1.000001, 1, 0, "time_limit"),
])
def test_one_past_each_end_is_refused_by_name(time_limit, workers, seed, named):
    with pytest.raises(ProblemError, match=f"^{named} must be"):
        check_arguments(PROBLEM, time_limit, workers, seed, None)


@pytest.mark.parametrize(("workers", "seed", "named"), [(True, 0, "workers"), (2, False, "seed")])
def test_a_bool_is_no_worker_count_nor_seed(workers, seed, named):
    with pytest.raises(ArgumentError, match=f"^{named} must be an integer|^{named} must be a 32-bit integer"):
        check_arguments(PROBLEM, 1, workers, seed, None)
