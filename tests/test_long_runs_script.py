"""benchmarks/long_runs.py: its cases, the switch to the solver as it was before the chained bound and
the LP-free short searches (restored afterwards, even after an error), and one row."""

from __future__ import annotations

from fractions import Fraction

import pytest

from schedc.problem import Problem
from schedc.solvers import cpsat_params, portfolio
from schedc.solvers.chain_bound import chain_applies
from tests.benchmark_scripts import load_benchmark


def test_its_cases_are_long_capped_runs_or_short_limits():
    bench = load_benchmark("long_runs")
    for spec, limit in bench.CASES:
        problem = Problem(**spec)
        assert problem.v == 1 and problem.binding_caps[0] is not None
        assert problem.m >= 8 * problem.p or limit < 10
    assert sum(chain_applies(Problem(**spec)) for spec, _ in bench.CASES) >= 8


def test_the_switch_restores_both_settings_even_after_an_error():
    bench = load_benchmark("long_runs")
    saved = portfolio.CHAIN_SHARE, cpsat_params.LP_SECONDS_PER_TASK
    with pytest.raises(RuntimeError), bench.before_the_change():
        assert portfolio.CHAIN_SHARE == cpsat_params.LP_SECONDS_PER_TASK == 0
        raise RuntimeError
    assert (portfolio.CHAIN_SHARE, cpsat_params.LP_SECONDS_PER_TASK) == saved > (0, 0)


def test_a_row_solves_before_then_now():
    row = load_benchmark("long_runs").measure(Problem(p=2, m=16, mem=(1,)), 1.0)
    assert row["tasks"] == 96 and row["limit"] == 1.0
    for side in (row["before"], row["now"]):
        assert Fraction(side["makespan"]) >= Fraction(side["bound"]) > 0
        assert abs(side["wall_per_limit"] - side["wall"] / 1.0) < 0.01  # wall rounded to 0.01 s
