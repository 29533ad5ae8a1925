"""A bool is no number: ``True`` is an int to Python, so without exact()'s own check a cost, a cap or a
time read from TOML or JSON as ``true`` would silently mean 1 (and ``false`` 0)."""

from __future__ import annotations

import pytest

from schedc.errors import ProblemError
from schedc.exact import exact
from schedc.problem import Problem


@pytest.mark.parametrize("value", [True, False])
def test_exact_refuses_a_bool(value):
    with pytest.raises(ProblemError, match=f"cost must be a number, got {value}"):
        exact(value, "cost")


@pytest.mark.parametrize("field", ["tf", "tb", "tw", "comm", "w_mem"])
def test_a_problem_refuses_a_bool_cost(field):
    with pytest.raises(ProblemError, match=f"{field} must be a number, got True"):
        Problem(p=2, m=2, **{field: True})


def test_a_problem_refuses_a_bool_cap():
    with pytest.raises(ProblemError, match="mem must be a number, got True"):
        Problem(p=2, m=2, mem=(True,))
