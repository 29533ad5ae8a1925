"""The schedc command line, run in-process through main() (plus one subprocess for the entry point)."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import pytest

from schedc import cli, cli_solve, load_plan
from schedc.baselines import baseline_plan
from schedc.cli import build_parser, main
from schedc.cli_common import problem_from_args
from schedc.problem import Problem
from schedc.torch_csv import read_csv_orders

SEED = ["--p", "2", "--m", "4", "--no-split", "--tb", "1", "--tw", "0"]


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def parse_problem(*argv: str) -> Problem:
    return problem_from_args(build_parser().parse_args(["compare", *argv]))


# ---- problem options ---------------------------------------------------------------------------


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


# ---- baseline, compare -------------------------------------------------------------------------


def test_baseline_prints_the_figures_and_writes_every_output(capsys, tmp_path):
    out_json, out_csv, out_trace = (str(tmp_path / name) for name in ("p.json", "p.csv", "t.json"))
    code, out, err = run(capsys, "baseline", "1f1b", *SEED, "-o", out_json, "--csv", out_csv,
                         "--trace", out_trace)
    assert code == 0 and err == ""
    assert "makespan 10   bubble 20.0%" in out and "peak activation per rank: 2 1" in out
    expected = baseline_plan("1f1b", Problem(p=2, m=4, split=False, tb=1, tw=0))
    assert load_plan(out_json).orders == expected.orders
    assert read_csv_orders(out_csv, expected.problem) == expected.orders
    assert len([e for e in json.loads(Path(out_trace).read_text())["traceEvents"] if e["ph"] == "X"]) == 16


def test_a_plan_over_its_cap_is_written_only_without_its_cap(tmp_path, capsys):
    """A plan JSON keeps its cap (and would fail validate); the CSV and trace carry none."""
    over = ["baseline", "1f1b", "--p", "2", "--m", "4", "--mem", "1"]
    code, _, _ = run(capsys, *over, "--csv", str(tmp_path / "p.csv"), "--trace", str(tmp_path / "t.json"))
    assert code == 0 and (tmp_path / "p.csv").exists() and (tmp_path / "t.json").exists()
    code, _, err = run(capsys, *over, "-o", str(tmp_path / "p.json"), "--csv", str(tmp_path / "q.csv"))
    assert code == 1 and "give --mem none" in err and not (tmp_path / "q.csv").exists()
    code, _, _ = run(capsys, *over[:-1], "none", "-o", str(tmp_path / "p.json"))
    assert code == 0 and run(capsys, "validate", str(tmp_path / "p.json"))[0] == 0


def test_trace_unit_scales_the_trace(tmp_path, capsys):
    """Profiled costs are microseconds: --trace-unit 1 writes them as they are (default: 1 = 1 ms)."""
    for unit, dur in (("1", 32006.0), (None, 32006000.0)):
        flags = ["--trace-unit", unit] if unit else []
        code, _, _ = run(capsys, "baseline", "1f1b", "--p", "2", "--m", "2", "--tf", "32006",
                         "--trace", str(tmp_path / "t.json"), *flags)
        events = json.loads((tmp_path / "t.json").read_text())["traceEvents"]
        assert code == 0 and next(e["dur"] for e in events if e["ph"] == "X") == dur


def test_baseline_show_prints_the_seed_table(capsys):
    code, out, _ = run(capsys, "baseline", "gpipe", *SEED, "--show", "--width", "80")
    assert code == 0
    assert "r0 F0 F1 F2 F3 __ __ B3 B2 B1 B0" in out and "peak activation per rank: 4 4" in out


def test_compare_lists_every_applicable_baseline_with_its_numbers(capsys):
    code, out, _ = run(capsys, "compare", *SEED, "--mem", "3")
    assert code == 0
    rows = {row[0]: row for row in map(str.split, out.splitlines()) if row[:1] in (["gpipe"], ["1f1b"])}
    assert rows["gpipe"] == ["gpipe", "10", "20.0%", "10", "4", "4", "NO"]
    assert rows["1f1b"] == ["1f1b", "10", "20.0%", "10", "2", "1", "yes"]
    assert "best that fits: 1f1b (makespan 10)" in out
    assert "\x1b[" not in out  # no colour codes when not a terminal


def test_compare_names_baselines_that_do_not_apply(capsys):
    code, out, _ = run(capsys, "compare", "--p", "2", "--m", "4", "--v", "2")
    assert code == 0 and "not applicable: gpipe: needs v = 1" in out


# ---- show, validate ----------------------------------------------------------------------------


@pytest.fixture
def seed_files(tmp_path, capsys):
    paths = {"json": str(tmp_path / "seed.json"), "csv": str(tmp_path / "seed.csv")}
    assert main(["baseline", "1f1b", *SEED, "-o", paths["json"], "--csv", paths["csv"]]) == 0
    capsys.readouterr()
    return paths


def test_show_reads_json_and_csv_with_problem_options(capsys, seed_files):
    for argv in (["show", seed_files["json"]], ["show", seed_files["csv"], *SEED]):
        code, out, _ = run(capsys, *argv, "--width", "100")
        assert code == 0
        assert "r0 F0 F1 __ B0 F2 B1 F3 B2 __ B3" in out and "makespan 10" in out


def test_a_csv_alone_gives_its_structure_and_options_give_the_costs(capsys, seed_files):
    # 1F1B over 5 steps of F + B, B = tb + tw = 2
    code, out, _ = run(capsys, "validate", seed_files["csv"])
    assert code == 0 and "OK: p=2 m=4 v=1 looped unsplit tf=1 tb=1 tw=1" in out and "makespan 15" in out
    code, out, _ = run(capsys, "validate", seed_files["csv"], "--tb", "1", "--tw", "0")
    assert code == 0 and "makespan 10" in out
    code, out, _ = run(capsys, "validate", seed_files["csv"], "--m", "5")
    assert code == 1 and "action 0F4: missing" in out


def test_show_converts_csv_to_json(capsys, seed_files, tmp_path):
    code, _, _ = run(capsys, "show", seed_files["csv"], *SEED, "-o", str(tmp_path / "back.json"))
    assert code == 0 and load_plan(str(tmp_path / "back.json")).orders == load_plan(seed_files["json"]).orders


def test_validate_ok_prints_the_figures(capsys, seed_files):
    code, out, _ = run(capsys, "validate", seed_files["json"])
    assert code == 0 and out.startswith("OK")
    assert "makespan 10" in out and "peak activation per rank: 2 1" in out
    code, out, _ = run(capsys, "validate", seed_files["csv"], "--problem", seed_files["json"])
    assert code == 0 and out.startswith("OK")


def test_validate_lists_every_error_and_checks_the_cap(capsys, seed_files, tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("0F0,0F0,0F1,0B0,0F2,0B1,0F3,0B2\n1F0,1B0,1F1,1B1,1F2,1B2,1F3,1B3,1X3\n")
    code, out, err = run(capsys, "validate", str(bad), *SEED)
    assert code == 1 and "rank 1 position 8 (row 2, column 9): unknown action token '1X3'" in err
    bad.write_text("0F0,0F0,0F1,0B0,0F2,0B1,0F3,0B2\n1F0,1B0,1F1,1B1,1F2,1B2,1F3,1B3\n")
    code, out, _ = run(capsys, "validate", str(bad), *SEED)
    assert code == 1
    assert "rank 0 position 1 action 0F0: duplicated" in out and "action 0B3: missing" in out
    assert out.strip().endswith("INVALID: 2 errors")
    code, out, _ = run(capsys, "validate", seed_files["csv"], *SEED, "--mem", "1.5")
    assert code == 1 and "activation memory 2 exceeds the cap 1.5" in out


def test_validate_counts_every_error_and_lists_the_first(capsys, tmp_path, monkeypatch):
    plan = tmp_path / "short.csv"
    plan.write_text("0F0\n1F0\n")
    code, out, _ = run(capsys, "validate", str(plan), "--p", "2", "--m", "20")
    lines = out.strip().splitlines()
    assert code == 1 and len(lines) == cli.SHOWN_ERRORS + 2
    assert lines[-2] == f"... and {6 * 20 - 2 - cli.SHOWN_ERRORS} more" and lines[-1] == "INVALID: 118 errors"
    monkeypatch.setattr(importlib.import_module("schedc.validate"), "LISTED_MISSING", 5)
    code, out, _ = run(capsys, "validate", str(plan), "--p", "2", "--m", "20")
    lines = out.strip().splitlines()  # five missing, one line for the other 113, the count
    assert code == 1 and len(lines) == 7 and lines[-2].endswith(": ... and 113 more missing actions")
    assert lines[-1] == "INVALID: 118 errors"


def test_validate_json_lists_every_order_error(capsys, seed_files, tmp_path):
    data = json.loads(Path(seed_files["json"]).read_text())
    data["ranks"][0].pop(0)  # drop 0F0 and duplicate 1B3; rank 1 as bare tokens (allowed in plan JSON)
    data["ranks"][1] = [entry[0] for entry in data["ranks"][1]] + ["1B3"]
    (tmp_path / "bad.json").write_text(json.dumps(data))
    code, out, _ = run(capsys, "validate", str(tmp_path / "bad.json"))
    assert code == 1 and "action 1B3: duplicated" in out and "action 0F0: missing" in out
    data = json.loads(Path(seed_files["json"]).read_text())
    data["ranks"][0][0][2] = 2  # 0F0 recorded as ending at 2 instead of 1: the orders are fine
    (tmp_path / "late.json").write_text(json.dumps(data))
    code, out, _ = run(capsys, "validate", str(tmp_path / "late.json"))
    assert code == 1 and "rank 0 position 0 action 0F0: lasts 2" in out  # and what follows from it:
    assert "action 1F0: starts at 1 before its input 0F0 arrives at 2" in out and "INVALID: 3 errors" in out


# ---- errors ------------------------------------------------------------------------------------


@pytest.fixture
def bad_files(tmp_path):
    files = {
        "token.csv": "0F0,0Q0\n1F0\n",
        "csv.txt": "0F0,0B0\n1F0,1B0\n",
        "rows.csv": "0F0,0B0\n1F0,1B0\n2F0,2B0\n",
        "bad.json": '{"format": "schedc-plan", ',
        "notplan.json": '{"hello": 1}',
        "bad.toml": "p = = 2\n",
        "costs.toml": "p = 2\nm = 2\nstage_costs = 5\n",
        "binary.json": "",
        "ok.toml": "p = 2\nm = 2\n",
        "stagecosts.toml": "p = 2\nm = 2\nstage_costs = [[1, 2, 1], [1, 1, 1]]\n",
        "tfcosts.toml": "p = 2\nm = 2\ntf = 2\nstage_costs = [[1, 2, 1], [1, 1, 1]]\n",
        "twocaps.toml": "p = 2\nm = 2\nmem = [1, 2]\n",
        "nocaps.toml": "p = 2\nm = 2\nmem = []\n",
        "empty.toml": "",
        "huge.json": json.dumps({"format": "schedc-plan", "version": 1, "problem": {"p": 2, "m": 10**9},
                                 "source": "x", "ranks": [["0F0"], ["1F0"]]}),
        "longint.json": '{"format": "schedc-plan", "version": 1, "lower_bound": ' + "1" * 5000 + "}",
        "longint.toml": "p = 2\nm = 2\ntf = " + "1" * 5000 + "\n",
        "deep.json": "[" * 100_000 + "]" * 100_000,
        "longtoken.csv": "9" * 5000 + "F0\n1F0\n",
        "wmem.toml": "p = 2\nm = 2\nw_mem = 3\n",
        "halfcap.toml": "p = 2\nm = 2\nmem = [0.5]\n",
        "twice.json": '{"p": 2, "m": 2, "mem": [1], "mem": null}',
        "twiceplan.json": '{"format": "schedc-plan", "format": "schedc-plan", "version": 1}',
    }
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    (tmp_path / "binary.json").write_bytes(b"\xff\xfe\x00\x81")
    os.link(tmp_path / "ok.toml", tmp_path / "hardlink.json")
    os.symlink("loop", tmp_path / "loop")
    return tmp_path


ERROR_CASES = {
    "bad token": (["validate", "{d}/token.csv", *SEED], "unknown action token '0Q0'"),
    "wrong rank count": (["show", "{d}/rows.csv", *SEED], "3 rows, but the problem has p = 2"),
    "bad json": (["show", "{d}/bad.json"], "not valid JSON"),
    "csv not named .csv": (["show", "{d}/csv.txt"], "(a torch CSV plan needs a .csv name)"),
    "not a plan": (["validate", "{d}/notplan.json"], "not a schedc plan"),
    "binary file": (["show", "{d}/binary.json"], "is not UTF-8 text"),
    "missing file": (["show", "{d}/nowhere.json"], "cannot read plan"),
    "missing problem file": (["compare", "--problem", "{d}/nowhere.toml"], "cannot read problem file"),
    "malformed toml": (["compare", "--problem", "{d}/bad.toml"], "is malformed"),
    "malformed field": (["compare", "--problem", "{d}/costs.toml"], "stage_costs"),
    "csv without problem, bad token": (["show", "{d}/token.csv"], "unknown action token '0Q0'"),
    "json with problem": (["validate", "{d}/bad.json", "--p", "3"], "apply to CSV plans only"),
    "p = 0": (["compare", "--p", "0", "--m", "4"], "--p must be a positive integer"),
    "p not a number": (["compare", "--p", "two", "--m", "4"], "--p must be an integer"),
    "bad cost": (["baseline", "gpipe", "--p", "2", "--m", "4", "--tf", "fast"], "--tf must be a number"),
    "bad cap": (["compare", "--p", "2", "--m", "4", "--mem", "1,,2"], "--mem has an empty entry"),
    "cap count": (["compare", "--p", "2", "--m", "4", "--mem", "1,2,3"], "--mem gives 3 caps for 2 ranks"),
    "vshape v=3": (["compare", "--p", "2", "--m", "4", "--v", "3", "--placement", "vshape"], "vshape"),
    "no p": (["compare", "--m", "4"], "--p required"),
    "infeasible cap, compare": (["compare", "--p", "4", "--m", "8", "--mem", "0.5"],
                                "smallest feasible cap 1"),
    "infeasible cap, baseline": (["baseline", "interleaved-1f1b", "--p", "2", "--m", "2", "--v", "2",
                                  "--mem", "1,3/4"],
                                 "rank 1 has activation cap 0.75, below the smallest feasible cap 1"),
    "unknown baseline": (["baseline", "zz-top", "--p", "2", "--m", "4"], "unknown schedule 'zz-top'"),
    "not applicable": (["baseline", "1f1b", "--p", "2", "--m", "4", "--v", "2"], "1f1b does not apply"),
    "unwritable output": (["baseline", "gpipe", "--p", "2", "--m", "2", "-o", "{d}/no/p"], "cannot write"),
    "output is a directory": (["baseline", "gpipe", "--p", "2", "--m", "1", "--trace", "{d}"], "a directory"),
    "empty output name": (["baseline", "gpipe", "--p", "2", "--m", "2", "-o", ""], "-o needs a file name"),
    "output to -": (["baseline", "gpipe", "--p", "2", "--m", "2", "--csv", "-"], "--csv needs a file name"),
    "two outputs, one file": (["baseline", "gpipe", "--p", "2", "--m", "2", "-o", "{d}/x.json", "--trace",
                               "{d}/x.json"], "-o and --trace name the same file"),
    "output name too long": (["baseline", "gpipe", "--p", "2", "--m", "2", "--csv", "{d}/" + "a" * 300],
                             "File name too long"),
    "output through a symlink loop": (["baseline", "gpipe", "--p", "2", "--m", "2", "-o", "{d}/loop"],
                                      "cannot write {d}/loop: Too many levels of symbolic links"),
    "output over a hard link to the input": (["baseline", "gpipe", "--problem", "{d}/ok.toml", "--csv",
                                              "{d}/hardlink.json"], "--problem and --csv name the same file"),
    "output over the input": (["baseline", "gpipe", "--problem", "{d}/ok.toml", "-o", "{d}/ok.toml"],
                              "--problem and -o name the same file"),
    "huge exponent": (["compare", "--p", "2", "--m", "4", "--tf", "1e999999999"], "--tf has an exponent out"),
    "huge number": (["baseline", "gpipe", "--p", "2", "--m", "2", "--tf", "1e400"], "--tf is out of range"),
    "too many tasks": (["compare", "--p", "1000000000", "--m", "1"], "problem too large: 3000000000 tasks"),
    "too many tasks in a plan": (["validate", "{d}/huge.json"], "problem too large"),
    "long int in a plan": (["show", "{d}/longint.json"], "is not valid JSON"),
    "long int in a problem": (["compare", "--problem", "{d}/longint.toml"], "is malformed"),
    "deep problem json": (["compare", "--problem", "{d}/deep.json"], "is malformed"),
    "bad field names the file": (["compare", "--problem", "{d}/wmem.toml"],
                                 "problem file {d}/wmem.toml: w_mem must be within [0, 1], got 3"),
    "bad flag over a file names the flag": (["compare", "--problem", "{d}/ok.toml", "--w-mem", "2"],
                                            "error: --w-mem must be within [0, 1], got 2\n"),
    "key twice in a problem": (["compare", "--problem", "{d}/twice.json"], "key 'mem' appears twice"),
    "key twice in a plan": (["validate", "{d}/twiceplan.json"], "key 'format' appears twice"),
    "long token in a csv": (["validate", "{d}/longtoken.csv", *SEED], "has an index too long"),
    "profile --threads 0": (["profile", "--p", "2", "--m", "2", "--threads", "0"], "--threads must be >= 1"),
    "profile --width 0": (["profile", "--p", "2", "--m", "2", "--width", "0"], "--width must be >= 1"),
    "profile heads": (["profile", "--p", "2", "--m", "2", "--model", "transformer", "--heads", "3"],
                      "--width 256 must be a multiple of --heads 3"),
    "profile -o directory": (["profile", "--p", "2", "--m", "2", "-o", "{d}"], "Is a directory"),
    "profile --module without :": (["profile", "--p", "2", "--m", "2", "--module", "mymod"],
                                   "--module mymod: expected PKG.MOD:FUNC"),
    "profile too few layers": (["profile", "--p", "8", "--m", "2", "--layers", "1"],
                               "(--model mlp with --layers 1) has 2 layers, fewer than the p*v = 8"),
    "cost flag over stage costs": (["compare", "--problem", "{d}/stagecosts.toml", "--tf", "5"],
                                   "--tf cannot override the per-stage costs (stage_costs)"),
    "tf beside stage costs in a file": (["compare", "--problem", "{d}/tfcosts.toml"],
                                        "tfcosts.toml: stage_costs set the costs of every stage, so tf, tb, "
                                        "tw would not apply"),
    "new p over per-rank caps": (["compare", "--problem", "{d}/twocaps.toml", "--p", "3"],
                                 "mem gives 2 caps for 3 ranks; give one or 3 (--p overrides"),
    "empty cap list": (["compare", "--problem", "{d}/nocaps.toml"], "mem = [] gives no caps"),
    "empty problem file": (["compare", "--problem", "{d}/empty.toml"], "gives no p or m: add it there"),
    "cap shown exactly": (["compare", "--p", "2", "--m", "2", "--mem", "0.99999999"],
                          "activation cap 0.99999999, below the smallest feasible cap 1"),
    "baseline over its cap, with files": (["baseline", "1f1b", "--p", "2", "--m", "4", "--mem", "1",
                                           "-o", "{d}/over.json"], "1f1b does not fit the cap, so nothing"),
    "trace unit without trace": (["baseline", "1f1b", "--p", "2", "--m", "4", "--trace-unit", "1"],
                                 "--trace-unit applies to --trace only"),
    "trace unit": (["baseline", "1f1b", "--p", "2", "--m", "4", "--trace", "{d}/t.json",
                    "--trace-unit", "-1"], "--trace-unit must be > 0"),
}


@pytest.mark.parametrize("case", ERROR_CASES, ids=list(ERROR_CASES))
def test_bad_input_is_one_line_on_stderr_and_exit_1(capsys, bad_files, case):
    argv, message = ERROR_CASES[case]
    code, out, err = run(capsys, *(a.format(d=bad_files) for a in argv))
    assert code == 1
    assert err.startswith("schedc: error: ") and err.count("\n") == 1 and message.format(d=bad_files) in err
    assert "Traceback" not in out + err


def test_an_infeasible_cap_names_the_problem_file_only_when_the_cap_came_from_it(capsys, bad_files):
    for argv, from_file in ((["--problem", f"{bad_files}/ok.toml", "--mem", "0.5"], False),
                            (["--problem", f"{bad_files}/halfcap.toml"], True)):
        code, _, err = run(capsys, "compare", *argv)
        assert code == 1 and "below the smallest feasible cap 1" in err
        assert ("(with problem file" in err) == from_file


def test_bad_output_path_fails_before_any_report(capsys, tmp_path):
    """baseline and show check their outputs first: no report on stdout, then an error."""
    bad = str(tmp_path / "no" / "p.json")
    assert run(capsys, "baseline", "1f1b", "--p", "2", "--m", "4", "-o", str(tmp_path / "p.json"))[0] == 0
    for argv in (["baseline", "1f1b", "--p", "2", "--m", "4", "-o", bad],
                 ["show", str(tmp_path / "p.json"), "--csv", bad],
                 ["show", str(tmp_path / "p.json"), "-o", str(tmp_path / "p.json")]):
        code, out, err = run(capsys, *argv)
        assert code == 1 and out == "" and err.startswith("schedc: error: ")


def test_failed_output_leaves_no_other_output(capsys, tmp_path):
    """All output paths are checked before the first is written."""
    code, _, err = run(capsys, "baseline", "gpipe", "--p", "2", "--m", "2", "-o", str(tmp_path / "p.json"),
                       "--csv", str(tmp_path / "no" / "p.csv"))
    assert code == 1 and "cannot write" in err and not (tmp_path / "p.json").exists()


def test_profile_option_errors_come_before_torch():
    code = ("import sys; from schedc.cli import main; "
            "code = main(['profile', '--p', '2', '--m', '2', '--repeats', '0']); "
            "sys.exit(code != 1 or 'torch' in sys.modules)")
    assert subprocess.run([sys.executable, "-c", code], capture_output=True).returncode == 0


def test_usage_errors_exit_2_and_help_exits_0(capsys):
    """One line each, naming the subcommand and where its usage is."""
    for argv, message in ((["frobnicate"], "invalid choice: 'frobnicate'"), ([], "required: COMMAND"),
                          (["show", "p.json", "--width", "wide"], "show: argument --width"),
                          (["show", "p.json", "--width", "0"], "must be at least 1"),
                          (["show", "p.json", "--width=-3"], "must be at least 1"),
                          (["solve", "--p", "2", "--m", "2", "--objective", "x"],
                           "solve: argument --objective"),
                          (["solve", "--p", "2", "--bogus"], "solve: unrecognized arguments: --bogus "
                                                             "(see schedc solve --help)")):
        code, _, err = run(capsys, *argv)
        assert code == 2 and err.startswith("schedc: error: ") and err.count("\n") == 1 and message in err
    code, out, _ = run(capsys, "--help")
    assert code == 0 and "baseline" in out and "validate" in out


def test_subcommands_from_other_modules_are_registered_and_dispatched(capsys, monkeypatch):
    def register(subparsers):
        parser = subparsers.add_parser("solve")
        parser.set_defaults(func=lambda args: print("solved") or 7)

    monkeypatch.setattr(cli_solve, "register", register)
    assert run(capsys, "solve") == (7, "solved\n", "")


def test_python_m_schedc_runs_and_never_imports_torch(tmp_path):
    """The entry point in a fresh interpreter; -X importtime logs every module imported on the way."""
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "schedc", "baseline", "1f1b", *SEED,
         "--show", "--csv", str(tmp_path / "p.csv"), "--trace", str(tmp_path / "t.json")],
        capture_output=True, text=True, timeout=120, check=False,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert "r0 F0 F1 __ B0" in result.stdout
    imported = {line.rsplit("|", 1)[-1].strip() for line in result.stderr.splitlines() if "|" in line}
    assert "schedc.cli" in imported and "rich.table" in imported
    assert not {name for name in imported if name.split(".")[0] == "torch"}
