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


def test_a_row_adds_the_allocating_runs_after_the_lookahead_runs():
    """p=4 m=8 v=3 cap 4, tb=2, comm 1/2: the portfolio 53, with the lookahead runs 52, with the
    allocating runs 137/3, a third above the analytic bound (136/3)."""
    row = load_benchmark("deep_stages").measure(Problem(p=4, m=8, v=3, mem=4, tb=2, comm=Fraction(1, 2)))
    assert [Fraction(row[key]) for key in ("before", "lookahead", "after", "bound")] == \
        [53, 52, Fraction(137, 3), Fraction(136, 3)]
    assert row["allocating_gain"] == float((52 - Fraction(137, 3)) / 52)


def test_with_solve_a_row_adds_the_solves_plan_bound_and_gap(monkeypatch, tmp_path, capsys):
    """p=4 m=8 v=3 cap 4, tb=2, comm 1/2: the list plan 137/3 is a third above the analytic bound,
    and a short solve proves it optimal (its bound phases reach it)."""
    import json
    import sys

    bench = load_benchmark("deep_stages")
    problem = Problem(p=4, m=8, v=3, mem=4, tb=2, comm=Fraction(1, 2))
    monkeypatch.setattr(bench, "grid", lambda: [problem])
    monkeypatch.setattr(sys, "argv", ["deep_stages.py", "--solve", "5", "--json", str(tmp_path / "d.json")])
    bench.main()
    data = json.loads((tmp_path / "d.json").read_text())
    [row] = data["rows"]
    assert Fraction(row["solved"]) <= Fraction(row["after"]) == Fraction(137, 3)
    assert Fraction(row["bound"]) <= Fraction(row["solved_bound"]) <= Fraction(row["solved"])
    gap = (Fraction(row["solved"]) - Fraction(row["solved_bound"])) / Fraction(row["solved_bound"])
    assert row["solved_gap"] == float(gap) and data["meta"]["mean_solved_gap"] == float(gap)
    assert data["meta"]["solve_seconds"] == 5 and data["meta"]["solved_within_1pct"] == int(gap <= 0.01)
    assert "solved in 5 s: mean gap" in capsys.readouterr().out
