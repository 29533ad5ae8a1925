"""Problem options from flags and files (a problem file, a plan read as one): what wins, and what
is refused."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import pytest

from schedc.cli import main
from tests.cli_helpers import parse_problem, run


def test_numbers_are_exact_and_caps_take_lists_and_none():
    problem = parse_problem("--p", "3", "--m", "5", "--tf", "0.1", "--tb", "1/3", "--comm", "2.5",
                            "--mem", "2, 1.5,none", "--w-mem", "1/4")
    assert (problem.tf, problem.tb, problem.comm) == (Fraction(1, 10), Fraction(1, 3), Fraction(5, 2))
    assert problem.mem == (Fraction(2), Fraction(3, 2), None) and problem.w_mem == Fraction(1, 4)
    assert parse_problem("--p", "2", "--m", "1", "--mem", "none").mem == (None, None)
    assert parse_problem("--p", "2", "--m", "1", "--mem", "3").mem == (3, 3)
    vshape = parse_problem("--p", "2", "--m", "1", "--v", "2", "--placement", "vshape", "--no-split")
    assert (vshape.placement, vshape.split, vshape.kinds) == ("vshape", False, ("F", "B"))


def test_problem_file_gives_stage_costs_and_flags_win(tmp_path):
    (tmp_path / "p.toml").write_text(
        'p = 2\nm = 4\nmem = [3, 2]\n'
        'stage_costs = [{tf = 1, tb = 2, tw = "1/2"}, {tf = 2, tb = 2, tw = 1}]\n'
    )
    problem = parse_problem("--problem", str(tmp_path / "p.toml"), "--m", "6", "--comm", "1/2")
    assert (problem.p, problem.m, problem.comm, problem.mem) == (2, 6, Fraction(1, 2), (3, 2))
    assert problem.duration("W", 0) == Fraction(1, 2) and problem.duration("F", 1) == 2
    (tmp_path / "p.json").write_text(json.dumps({"p": 3, "m": 2, "split": False}))
    assert parse_problem("--problem", str(tmp_path / "p.json"), "--split").split is True


def test_a_saved_plan_with_one_cap_reads_as_a_problem_with_another_p(tmp_path):
    plan = str(tmp_path / "plan.json")
    assert main(["baseline", "1f1b", "--p", "2", "--m", "4", "--mem", "2", "-o", plan]) == 0
    assert json.loads(Path(plan).read_text())["problem"]["mem"] == 2
    assert parse_problem("--problem", plan, "--p", "4").mem == (2, 2, 2, 2)


@pytest.mark.parametrize("name", ["plan", "plan.out", "plan.JSON"])
def test_a_plan_saved_under_any_name_reads_back_as_a_problem(tmp_path, name):
    """-o takes any name but .csv and .toml: one without a suffix was read as TOML ("malformed");
    JSON is now told by its first character too, which no TOML document starts with."""
    plan = str(tmp_path / name)
    assert main(["baseline", "1f1b", "--p", "2", "--m", "4", "--mem", "2", "-o", plan]) == 0
    assert parse_problem("--problem", plan).mem == (2, 2)


def test_a_toml_file_is_still_toml_whatever_its_name(tmp_path):
    (tmp_path / "problem").write_text("# a comment first\np = 2\nm = 3\n")
    assert (parse_problem("--problem", str(tmp_path / "problem")).m) == 3


@pytest.mark.parametrize(("data", "says"), [
    ({"format": "schedc-plan", "version": 2, "problem": {"p": 2, "m": 4}}, "plan format version 2, this"),
    ({"format": "schedc-plan", "version": "x", "problem": {"p": 2, "m": 4}}, "plan format version 'x'"),
    ({"problem": {"p": 2, "m": 4}}, 'holds its fields under "problem", as a plan does, but is no'),
])
def test_a_problem_file_is_a_plan_this_schedc_reads_or_a_table_of_fields(tmp_path, capsys, data, says):
    """A plan of another format version was read as a problem (validate refused it); fields under
    "problem" without a plan's header were reported as "no p or m" until --p and --m were given."""
    path = tmp_path / "x.json"
    path.write_text(json.dumps(data))
    code, out, err = run(capsys, "baseline", "1f1b", "--problem", str(path), "--p", "2", "--m", "4")
    assert code == 1 and out == "" and says in err and len(err.splitlines()) == 1


@pytest.mark.parametrize(("value", "says"), [
    ("-1/-2", "--tf must be a number, got '-1/-2'"),
    ("-1e3", "costs need tf > 0, tb > 0, tw >= 0; got -1000, 1, 1"),
    ("-.5", "costs need tf > 0, tb > 0, tw >= 0; got -0.5, 1, 1"),
])
def test_a_negative_value_gets_its_own_error_not_argparse_s(capsys, value, says):
    """argparse took ``-1`` as a value but ``-1/-2`` and ``-1e3`` as unknown options, and said
    "argument --tf: expected one argument"."""
    code, _, err = run(capsys, "solve", "--p", "2", "--m", "2", "--tf", value)
    assert code != 0 and err == f"schedc: error: {says}\n"


def test_an_option_after_a_value_taking_flag_is_still_an_option(capsys):
    code, _, err = run(capsys, "solve", "--p", "2", "--m", "2", "--tf", "--tb", "1")
    assert code == 2 and "argument --tf: expected one argument" in err


@pytest.mark.parametrize("field", ["stage_costs", "comm", "p", "w_mem"])
def test_a_null_field_in_a_json_problem_file_is_refused_but_a_null_cap_is_none(tmp_path, capsys, field):
    """``"stage_costs": null`` in a profiled file fell back to tf = tb = tw = 1 beside the measured
    comm without a word; only mem reads null (no cap)."""
    path = tmp_path / "x.json"
    path.write_text(json.dumps({"p": 2, "m": 4, "mem": None, field: None}))
    code, out, err = run(capsys, "solve", "--problem", str(path))
    says = f"{field} is null; give it a value, or leave it out for its default\n"
    assert code == 1 and out == "" and err.endswith(says) and len(err.splitlines()) == 1
    path.write_text(json.dumps({"p": 2, "m": 4, "mem": None}))
    assert parse_problem("--problem", str(path)).mem == (None, None)


@pytest.mark.parametrize("command", [["solve", "--p", "2", "--m", "3"], ["validate", "plan.csv"]])
def test_an_empty_problem_file_name_is_refused(capsys, command):
    """``--problem "$F"`` with F unset planned the flags' problem (or checked against defaults), exit 0."""
    code, out, err = run(capsys, *command, "--problem", "")
    assert code == 2 and out == "" and "argument --problem: needs a value, got ''" in err
