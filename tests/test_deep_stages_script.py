"""benchmarks/deep_stages.py: its held-out grid and one row, on the instance the lookahead runs were
found on (its list plan before them, 65.75, and after, the optimum)."""

from __future__ import annotations

from fractions import Fraction

from schedc.problem import Problem
from tests.benchmark_scripts import load_benchmark


def test_its_grid_has_three_or_four_stages_per_rank_under_a_cap():
    bench = load_benchmark("deep_stages")
    problems = bench.grid()
    assert len(problems) == 32 and len(set(problems)) == 32
    assert all(p.v in (3, 4) and p.mem[0] >= 1 and p.num_tasks <= bench.MAX_TASKS for p in problems)


def test_a_row_compares_the_portfolio_without_and_with_the_deep_runs():
    row = load_benchmark("deep_stages").measure(Problem(p=8, m=16, v=4, mem=4))
    assert Fraction(row["before"]) == Fraction(263, 4)
    assert Fraction(row["after"]) == Fraction(row["bound"]) == Fraction(223, 4)
    assert row["gain"] == float((Fraction(263, 4) - Fraction(223, 4)) / Fraction(263, 4))
