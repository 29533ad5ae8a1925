"""benchmarks/solver_quality.py's cap sweep: its instances (the committed solver_caps.json, which the
README's sweep table quotes, holds a run of these), and a summary that counts them apart from the
grid's."""

from __future__ import annotations

import json
from fractions import Fraction

import pytest

from schedc.solvers.feasibility import min_feasible_cap
from tests.benchmark_scripts import BENCHMARKS, load_benchmark


@pytest.fixture(scope="module")
def quality():
    return load_benchmark("solver_quality")


@pytest.fixture(scope="module")
def instances():
    return load_benchmark("quality_instances")


def test_cap_sweep_covers_the_caps_the_grid_skips(instances):
    sweep = instances.cap_sweep(60)
    caps: dict[tuple[int, str], list[Fraction]] = {}
    for inst in sweep:
        caps.setdefault((inst.problem.p, inst.problem.placement), []).append(inst.problem.mem[0])
    half = [Fraction(k, 2) for k in range(3, 9)]
    assert caps == {(4, "looped"): half, (4, "vshape"): half,
                    (8, "looped"): list(range(2, 9)), (8, "vshape"): list(range(2, 9))}
    assert len({i.name for i in sweep}) == len(sweep) == 26
    for inst in sweep:
        problem = inst.problem
        assert inst.group == "caps" and problem.v == 2 and problem.m == 16 and problem.split
        assert (problem.comm, problem.tf, problem.tb, problem.tw) == (Fraction(1, 2), 1, 2, 1)
        assert problem.mem[0] >= min_feasible_cap(problem)  # every one has a plan
    grid_caps = {(i.problem.p, i.problem.mem[0]) for i in instances.grid(60)
                 if i.problem.p in (4, 8) and i.problem.mem}
    assert (4, 3) not in grid_caps and (8, 3) not in grid_caps  # what the sweep is for
    committed = json.loads((BENCHMARKS / "solver_caps.json").read_text())["records"]
    assert [r["name"] for r in committed] == [i.name for i in sweep]  # a changed sweep needs a rerun


def test_summary_counts_the_sweep_apart_from_the_grid(quality):
    def record(group: str, value: int, bound: int, status: str):
        return quality.Record(f"{group}-{value}-{bound}", group, 384, 60.0, value=Fraction(value),
                              lower_bound=Fraction(bound), status=status, fits=True)

    records = [record("grid", 100, 100, "optimal"), record("caps", 100, 100, "optimal"),
               record("caps", 110, 100, "feasible")]
    summary = quality.summary(records)
    assert (summary["grid_small"], summary["grid_small_within_1pct"]) == (1, 1)
    counts = [summary[f"caps_small{key}"] for key in ("", "_within_1pct", "_optimal")]
    assert counts == [2, 1, 1]
    assert summary["caps_small_max_gap"] == pytest.approx(10 / 110)
