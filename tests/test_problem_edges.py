# sed -i '119s/self.tb <= 0/self.tb < 0/' schedc/problem.py
# sed -i '138s/self.num_tasks > MAX_TASKS/self.num_tasks >= MAX_TASKS/' schedc/problem.py
# sed -i '152s/len(set(caps)) == 1/len(caps) == 1/' schedc/problem.py
# sed -i '314s/return isinstance(value, bool) or/return isinstance(value, int) or/' schedc/problem.py
"""Edges of the problem model's checks (schedc/problem.py): tb must be > 0 for a uniform-cost problem
too, the task limit admits exactly MAX_TASKS, a shared cap survives ``dataclasses.replace`` with
another p, and split takes only a bool (as counts take no bool)."""

from __future__ import annotations

import dataclasses

import pytest

from schedc.errors import ProblemError
from schedc.problem import MAX_TASKS, Problem


def test_a_zero_input_gradient_cost_is_refused() -> None:
    """I carries the input gradient to the previous stage: a zero cost is no backward (the per-stage
    check says so too); only tw may be 0."""
    with pytest.raises(ProblemError, match="tb > 0"):
        Problem(p=2, m=2, tb=0)


def test_the_task_limit_admits_exactly_max_tasks() -> None:
    """Unsplit, one rank: m = MAX_TASKS / 2 gives exactly MAX_TASKS tasks, the largest problem
    schedc takes; one microbatch more is refused."""
    exact = Problem(p=1, m=MAX_TASKS // 2, split=False)
    assert exact.num_tasks == MAX_TASKS
    with pytest.raises(ProblemError, match="problem too large"):
        Problem(p=1, m=MAX_TASKS // 2 + 1, split=False)


def test_a_shared_cap_follows_a_replace_with_more_ranks() -> None:
    """The documented reason equal caps count as one: ``dataclasses.replace(problem, p=...)`` passes
    the p equal caps back in, which must stay one cap for every rank, not p caps for the wrong p."""
    problem = Problem(p=2, m=4, mem=2)
    assert dataclasses.replace(problem, p=3).mem == (2, 2, 2)
    assert dataclasses.replace(problem, p=1).mem == (2,)


@pytest.mark.parametrize("value", [1, 0, 2])
def test_split_takes_a_bool_not_a_number(value: int) -> None:
    """split=1 read as true (and 2 as well) where a typo or a numeric column meant something else;
    counts refuse bools, and split refuses numbers."""
    with pytest.raises(ProblemError, match="split must be true or false"):
        Problem(p=2, m=2, split=value)
