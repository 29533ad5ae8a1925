"""benchmarks/periodic_middle.py: the full model with a periodic middle gives valid plans within the
cap, never better than the unrestricted optimum, and none at a period the cap cannot keep."""

from __future__ import annotations

import json
from fractions import Fraction

import pytest

from schedc.plan_json import load_plan
from schedc.problem import Problem
from schedc.solvers import solve
from schedc.solvers.list_scheduler import best_list_result
from tests.benchmark_scripts import load_benchmark


@pytest.fixture(scope="module")
def middle():
    return load_benchmark("periodic_middle")


def _run(middle, problem: Problem, k: int, period: Fraction, head: int = 1):
    return middle.middle_plan(problem, k, period, head=head, horizon=middle._serial(problem),
                              time_limit=20, workers=1)


def test_a_busy_enough_period_gives_a_plan_no_better_than_the_optimum(middle):
    problem = Problem(p=4, m=8, tf=1, tb=2, tw=1)  # every rank works 4 per microbatch
    status, plan = _run(middle, problem, 1, Fraction(4))
    assert status == "OPTIMAL" and plan.violations() == [] and plan.fits()
    best = solve(problem, time_limit=20, workers=1)
    assert best.status == "optimal" and plan.value >= best.value


def test_cap_one_needs_the_whole_round_trip_per_microbatch(middle):
    # cap 1: F(0, j+1) waits for W(0, j), which ends a round trip after F(0, j) starts: 4 forwards,
    # 4 input gradients and the W (tf = tb = tw = 1). A shorter period holds no plan; the middle
    # need not be a modulo schedule otherwise (a finite run of F, I and W can be laid out apart).
    problem = Problem(p=4, m=8, mem=(1,))
    assert _run(middle, problem, 1, Fraction(8)) == ("INFEASIBLE", None)
    status, plan = _run(middle, problem, 1, Fraction(9))
    assert status == "OPTIMAL" and plan.violations() == [] and plan.fits()


def test_capped_two_stage_plan_fits(middle):
    problem = Problem(p=2, m=6, v=2, placement="vshape", mem=(Fraction(3, 2),), tf=1, tb=2, tw=1)
    status, plan = _run(middle, problem, 2, Fraction(12))
    assert status == "OPTIMAL" and plan.violations() == [] and plan.fits()
    assert plan.timeline.peak_mem[0] <= Fraction(3, 2)


def test_a_period_off_the_ticks_is_refused(middle):
    with pytest.raises(ValueError, match="whole number"):
        _run(middle, Problem(p=2, m=4), 1, Fraction(1, 3))


def test_a_middle_of_no_microbatch_is_refused_not_reported_at_any_period(middle):
    """m = 4 with the default head of 3 held nothing to the period: the plain optimum (21) came back
    as a plan at period 1, below one rank's own work of 4 per microbatch."""
    with pytest.raises(ValueError, match="hold no microbatch of m = 4"):
        _run(middle, Problem(p=2, m=4), 1, Fraction(1), head=3)
    assert _run(middle, Problem(p=2, m=4), 1, Fraction(4), head=1)[0] == "OPTIMAL"  # microbatch 1 held


@pytest.mark.parametrize("argv, message", [
    (["--period", "0"], "must be > 0"),
    (["--period", "ten"], "must be a number"),
    (["--period", "1/3"], "whole number of the model's ticks"),
    (["--period", "10", "--only", "no-such-instance"], "matches no grid instance"),
    (["--period", "1"], "--k 1 and --head 3 hold no microbatch of m = 2 to the period (it needs m >= 2 * "
                        "head + k + 1 = 8)"),
])
def test_bad_arguments_are_one_line_errors(middle, capsys, tmp_path, argv, message):
    given = dict(zip(argv[::2], argv[1::2], strict=True))
    base = {"--only": "p2-m2-v1-split-c0-mem1-uneq$", "--k": "1"} | given
    args = [item for pair in base.items() for item in pair] + ["--json", str(tmp_path / "unused.json")]
    with pytest.raises(SystemExit) as stop:
        middle.main(args)
    err = capsys.readouterr().err.strip().splitlines()
    assert stop.value.code == 2 and message in err[-1]
    assert not (tmp_path / "unused.json").exists()


def test_an_instance_without_a_middle_is_refused_before_any_search(middle, capsys, tmp_path, monkeypatch):
    """With --only matching several instances, one of small m ended the run after the earlier ones
    were searched, and wrote no JSON."""
    monkeypatch.setattr(middle, "middle_plan", lambda *a, **k: pytest.fail("searched"))
    args = ["--only", "^p2-m(2|8)-v1-split-c0-mem1-uneq$", "--k", "1", "--period", "4", "--head", "2",
            "--json", str(tmp_path / "out.json")]
    with pytest.raises(SystemExit) as stop:
        middle.main(args)
    assert stop.value.code == 2 and "p2-m2-v1-split-c0-mem1-uneq: --k 1 and --head 2 hold no microbatch" in \
        capsys.readouterr().err


def test_the_committed_plan_of_the_headline_with_v2_is_115_5():
    """The README's figure: p=8 m=32 v=2 looped mem=4 (the headline with ``--v 2``) has a plan of
    115.5, its optimum (the bound is the block relaxation's, SOLVER_NOTES.md). The replay and the
    validator decide, not the file."""
    from schedc.plan_json import load_plan
    from tests.benchmark_scripts import BENCHMARKS

    instances = load_benchmark("quality_instances")
    problem = next(i.problem for i in instances.hard(60) if i.name == "p8-m32-v2-split-c0-mem4-eq")
    plan = load_plan(str(BENCHMARKS / "plans" / "p8-m32-v2-split-c0-mem4-eq-k3-period10.json"))
    assert plan.problem == problem
    assert plan.violations() == [] and plan.fits() and plan.makespan == Fraction(231, 2)


def test_the_committed_deep_plan_is_121_75():
    """The README's figure: p=8 m=32 v=4 mem=3, where the solver keeps its list plan of 127.75, has a
    plan of 121.75 with a periodic middle (k = 1, period 3.5). The replay and the validator decide."""
    from tests.benchmark_scripts import BENCHMARKS

    plan = load_plan(str(BENCHMARKS / "plans" / "p8-m32-v4-mem3-k1-period7_2.json"))
    assert plan.problem == Problem(p=8, m=32, v=4, mem=(3,))
    assert plan.violations() == [] and plan.fits() and plan.makespan == Fraction(487, 4)


def test_a_problem_file_is_held_to_the_period_and_ends_by_its_list_plan(middle, tmp_path):
    (tmp_path / "cap1.toml").write_text("p = 4\nm = 8\nmem = 1\n")
    out = tmp_path / "out.json"
    args = ["--problem", str(tmp_path / "cap1.toml"), "--k", "1", "--period", "9", "--head", "1",
            "--workers", "1", "--time-limit", "20", "--json", str(out), "--plans", str(tmp_path / "plans")]
    assert middle.main(args) == 0
    [row] = json.loads(out.read_text())
    problem = Problem(p=4, m=8, mem=(1,))
    assert row["name"] == "cap1" and row["grid_bound"] is None
    assert Fraction(row["grid_plan"]) == best_list_result(problem).makespan
    assert row["status"] == "OPTIMAL" and Fraction(row["plan"]) <= Fraction(row["grid_plan"])
    plan = load_plan(str(tmp_path / "plans" / "cap1-k1-period9.json"))
    assert plan.problem == problem and plan.violations() == [] and plan.makespan == Fraction(row["plan"])


@pytest.mark.parametrize("text, message", [
    ("p = 2\nm = 8\nmem = 0.5\n", "--problem: rank 0 has activation cap 0.5, below the smallest feasible"),
    ("p = 2\nm = 0\n", "--problem: {tmp}/bad.toml: field m must be"),
    (None, "argument --only: not allowed with argument --problem"),
])
def test_a_bad_problem_file_is_a_one_line_error(middle, capsys, tmp_path, text, message):
    (tmp_path / "bad.toml").write_text(text or "p = 2\nm = 8\n")
    args = ["--problem", str(tmp_path / "bad.toml"), "--k", "1", "--period", "4",
            "--json", str(tmp_path / "o.json")]
    with pytest.raises(SystemExit) as stop:
        middle.main(args + ([] if text else ["--only", "p2"]))
    err = capsys.readouterr().err.strip().splitlines()
    assert stop.value.code == 2 and message.replace("{tmp}", str(tmp_path)) in err[-1]
    assert not (tmp_path / "o.json").exists()
