# sed -i '65s/0 <= index < problem.p/0 <= index <= problem.p/' runtime/stages.py
# sed -i '183s/not 0 <= rank < problem.p/not 0 <= rank <= problem.p/' runtime/stages.py
# sed -i '98s/isinstance(value, bool)/isinstance(value, str)/' runtime/stages.py
# sed -i '120s/len(b) == 2/len(b) >= 2/' runtime/stages.py
"""``split_stages``' arguments at their ends (runtime/stages.py): the rank one past the last, a bool
where an integer count or rank goes, and a bound that is not a pair each fail with the one-line
``PlanMismatchError``/``ArgumentError``, not an IndexError, a ValueError from unpacking, or a
silent reading of True as 1."""

from __future__ import annotations

import pytest
from torch import nn

from schedc.errors import ArgumentError
from schedc.problem import Problem
from schedc.runtime import PlanMismatchError, split_stages, stage_bounds
from schedc.runtime.stages import fit_errors


def _layers(n: int) -> list[nn.Module]:
    return [nn.Linear(2, 2) for _ in range(n)]


def test_the_rank_one_past_the_last_is_refused_by_name() -> None:
    """Ranks are 0..p-1: rank p is outside the plan (an off-by-one let it through to an IndexError)."""
    problem = Problem(p=2, m=2)
    assert sorted(split_stages(_layers(2), problem, 1)) == [1]
    with pytest.raises(PlanMismatchError, match="rank 2 is outside the plan's 2 ranks"):
        split_stages(_layers(2), problem, 2)


def test_bools_are_not_counts_or_ranks() -> None:
    """True is not rank 1 nor one stage: numpy integers are accepted, bools are refused."""
    problem = Problem(p=2, m=2)
    with pytest.raises(PlanMismatchError, match="outside the plan's 2 ranks"):
        split_stages(_layers(2), problem, True)
    with pytest.raises(ArgumentError, match="stage_bounds needs integer counts"):
        stage_bounds(4, True)
    with pytest.raises(PlanMismatchError, match="list of \\(start, end\\) integer pairs"):
        split_stages(_layers(2), problem, 0, bounds=[(0, True), (True, 2)])


def test_a_bound_with_three_numbers_is_not_a_pair() -> None:
    """Each bound is (start, end): a triple fails the bounds check, not Python's unpacking."""
    problem = Problem(p=2, m=2)
    with pytest.raises(PlanMismatchError, match="list of \\(start, end\\) integer pairs"):
        split_stages(_layers(3), problem, 0, bounds=[(0, 1, 3), (1, 3)])


def test_fit_errors_name_a_rank_past_the_plan_in_a_larger_group() -> None:
    """A world of 3 running a plan of p = 2: rank 2 gets both reasons as messages (the runner joins
    them into one error), not an IndexError from looking up the stages of a rank the plan lacks."""
    problem = Problem(p=2, m=2)
    errors = fit_errors(problem, {0: nn.Linear(2, 2)}, 2, 3)
    assert errors == ["the plan has p = 2 ranks but the process group has 3",
                      "it is outside the plan's 2 ranks"]
