# sed -i '75s/ or "plan" in vars(args)//' schedc/cli.py
# sed -i '74s/(".toml", ".json")/(".toml",)/' schedc/cli.py
"""Bad input through the command line: one line on stderr and a non-zero exit, never a traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from schedc.baselines import baseline_plan
from schedc.plan_json import plan_text
from schedc.problem import Problem
from tests.cli_helpers import SEED, run

# ---- bad input ---------------------------------------------------------------------------------


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
        "empty.csv": "",
        "comms.csv": "0SEND_F0\n",
        "blankline.csv": "0F0,0I0,0W0\n1F0,1I0,1W0\n\n",
        "farsend.csv": "0F0,0SEND_F0,0I0,0W0\n1RECV_F0,1F0,1I0,1SEND_B0,1W0,3SEND_B0\n",
        "sparse.csv": "0F0,0I0,0W0,0F3000000\n",
        "longstage.csv": "9" * 4000 + "F0\n1F0\n",
        "equalcaps.toml": "p = 2\nm = 2\nmem = [3, 3, 3]\n",
        "nestedcaps.toml": "p = 2\nm = 2\nmem = [[1, 2], [3]]\n",
    }
    plan = json.loads(plan_text(baseline_plan("1f1b", Problem(p=2, m=2))))
    del plan["problem"]["p"]
    files["nop.json"] = json.dumps(plan)
    plan["problem"]["p"], plan["solve_seconds"] = 2, 10**400
    files["seconds.json"] = json.dumps(plan)
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    (tmp_path / "binary.json").write_bytes(b"\xff\xfe\x00\x81")
    os.link(tmp_path / "ok.toml", tmp_path / "hardlink.json")
    os.symlink("loop", tmp_path / "loop")
    return tmp_path


ERROR_CASES = {
    "empty csv": (["validate", "{d}/empty.csv"], "empty.csv: no compute actions (F, I, W or B) in any row"),
    "csv of transfers only": (["show", "{d}/comms.csv", "--p", "1", "--m", "1"], "no compute actions"),
    "csv sending from a stage it lacks": (["validate", "{d}/farsend.csv"],
                                          "farsend.csv: row 2 (rank 1), column 6: transfer token '3SEND_B0' "
                                          "names stage 3, but the problem has 2 stages"),
    "csv with a blank last line": (["validate", "{d}/blankline.csv"], "blankline.csv: row 3 is blank: each "
                                   "row lists one rank's actions (remove it)"),
    "a typo makes m three million": (["show", "{d}/sparse.csv"],
                                     "plan has 4 actions for the 9000003 tasks of p=1 m=3000001"),
    "a 4000-digit stage": (["validate", "{d}/longstage.csv", *SEED], "has an index too long"),
    "huge solve_seconds": (["validate", "{d}/seconds.json"], "solve_seconds must be a finite number >= 0"),
    "plan's problem without p": (["show", "{d}/nop.json"], "the problem gives no p (ranks)"),
    "equal caps, wrong count": (["compare", "--p", "4", "--m", "4", "--mem", "4,4"],
                                "--mem gives 2 caps for 4 ranks"),
    "equal caps in a file, wrong count": (["compare", "--problem", "{d}/equalcaps.toml"],
                                          "equalcaps.toml: mem gives 3 caps for 2 ranks"),
    "a list as a cap": (["compare", "--problem", "{d}/nestedcaps.toml"],
                        "nestedcaps.toml: mem[0] must be a number, got [1, 2]"),
    "profile onto its own problem file": (["profile", "--problem", "{d}/ok.toml", "-o", "{d}/ok.toml"],
                                          "--problem and -o name the same file"),
    "bad token": (["validate", "{d}/token.csv", *SEED], "unknown action token '0Q0'"),
    "wrong rank count": (["show", "{d}/rows.csv", *SEED], "3 rows, but the problem has p = 2"),
    "bad json": (["show", "{d}/bad.json"], "not valid JSON"),
    "csv not named .csv": (["show", "{d}/csv.txt"], "(a torch CSV plan needs a .csv name)"),
    "not a plan": (["validate", "{d}/notplan.json"], "not a schedc plan"),
    "binary file": (["show", "{d}/binary.json"], "is not UTF-8 text"),
    "missing file": (["show", "{d}/nowhere.json"], "cannot read plan"),
    "missing problem file": (["compare", "--problem", "{d}/nowhere.toml"], "cannot read problem file"),
    "malformed toml": (["compare", "--problem", "{d}/bad.toml"],
                       "is malformed (read as TOML, as every name but .json is unless it starts with {{)"),
    "malformed field": (["compare", "--problem", "{d}/costs.toml"], "stage_costs"),
    "csv without problem, bad token": (["show", "{d}/token.csv"], "unknown action token '0Q0'"),
    "json with problem": (["validate", "{d}/bad.json", "--p", "3"], "apply to CSV plans only"),
    "p = 0": (["compare", "--p", "0", "--m", "4"], "--p must be a positive integer"),
    "p not a number": (["compare", "--p", "two", "--m", "4"], "--p must be an integer"),
    "p with an underscore": (["compare", "--p", "4_0", "--m", "4"],
                             "--p must be written in ASCII digits without underscores, got '4_0'"),
    "full-width digit": (["compare", "--p", "2", "--m", "\uff14"], "--m must be written in ASCII digits"),
    "cost with an underscore": (["compare", "--p", "2", "--m", "4", "--tb", "1_5"],
                                "--tb must be written in ASCII digits without underscores, got '1_5'"),
    "Arabic-Indic cap": (["compare", "--p", "2", "--m", "4", "--mem", "\u0663"],
                         "--mem must be written in ASCII"),
    "time limit with an underscore": (["solve", "--p", "2", "--m", "2", "--time-limit", "1_0"],
                                      "--time-limit must be written in ASCII digits"),
    "seed with a full-width digit": (["solve", "--p", "2", "--m", "2", "--seed", "\uff11"],
                                     "--seed must be written in ASCII digits"),
    "workers with an underscore": (["solve", "--p", "2", "--m", "2", "--workers", "1_0"],
                                   "--workers must be written in ASCII digits"),
    "width without a timeline": (["baseline", "1f1b", "--p", "2", "--m", "2", "--width", "50"],
                                 "--width sets the timeline's columns: give --show too"),
    "input shape without a module": (["profile", "--p", "2", "--m", "2", "--input-shape", "3"],
                                     "--input-shape describes the input of a --module"),
    "input dtype without a module": (["profile", "--p", "2", "--m", "2", "--input-dtype", "int64"],
                                     "--input-dtype describes the input of a --module"),
    "no workers": (["solve", "--p", "2", "--m", "2", "--workers", "0"], "--workers must be from 1 to 10000"),
    "too many workers": (["solve", "--p", "2", "--m", "2", "--workers", "10001"],
                         "--workers must be from 1 to 10000 (CP-SAT's limit), got 10001"),
    "far too many workers": (["solve", "--p", "2", "--m", "2", "--workers", "3000000000"],
                             "--workers must be from 1 to 10000 (CP-SAT's limit), got 3000000000"),
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
    "unwritable output": (["baseline", "gpipe", "--p", "2", "--m", "2", "-o", "{d}/no/p"],
                          "cannot write {d}/no/p: no directory {d}/no"),
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
    "deep problem json": (["compare", "--problem", "{d}/deep.json"],
                          "is malformed (read as JSON, by its name)"),
    "bad field names the file": (["compare", "--problem", "{d}/wmem.toml"],
                                 "problem file {d}/wmem.toml: w_mem must be within [0, 1], got 3"),
    "bad flag over a file names the flag": (["compare", "--problem", "{d}/ok.toml", "--w-mem", "2"],
                                            "error: --w-mem must be within [0, 1], got 2\n"),
    "key twice in a problem": (["compare", "--problem", "{d}/twice.json"], "key 'mem' appears twice"),
    "key twice in a plan": (["validate", "{d}/twiceplan.json"], "key 'format' appears twice"),
    "long token in a csv": (["validate", "{d}/longtoken.csv", *SEED], "has an index too long"),
    "profile --threads 0": (["profile", "--p", "2", "--m", "2", "--threads", "0"],
                            "--threads must be within [1, 1024], got 0"),
    "profile --threads 50000": (["profile", "--p", "2", "--m", "2", "--threads", "50000"],
                                "--threads must be within [1, 1024], got 50000"),  # torch crashed
    "profile --width 0": (["profile", "--p", "2", "--m", "2", "--width", "0"], "--width must be >= 1"),
    "profile heads": (["profile", "--p", "2", "--m", "2", "--model", "transformer", "--heads", "3"],
                      "--width 256 must be a multiple of --heads 3"),
    "profile -o directory": (["profile", "--p", "2", "--m", "2", "-o", "{d}"], "Is a directory"),
    "csv under another name": (["baseline", "gpipe", "--p", "2", "--m", "2", "--csv", "{d}/p.json"],
                               "--csv {d}/p.json: give it a name ending in .csv, such as plan.csv"),
    "csv named .csv alone": (["baseline", "gpipe", "--p", "2", "--m", "2", "--csv", "{d}/.csv"],  # a dotfile
                             "--csv {d}/.csv: a hidden file has no suffix: name it plan.csv, say (show"),
    "plan json under a csv name": (["baseline", "gpipe", "--p", "2", "--m", "2", "-o", "{d}/p.csv"],
                                   "-o {d}/p.csv: -o writes a plan JSON, which show and validate would read"),
    "plan json under a toml name": (["baseline", "gpipe", "--p", "2", "--m", "2", "-o", "{d}/p.toml"],
                                    "-o {d}/p.toml: -o writes a plan JSON, which a .toml name passes off"),
    "trace under a csv name": (["solve", "--p", "2", "--m", "2", "--trace", "{d}/t.csv"],
                               "--trace {d}/t.csv: a trace is JSON (Chrome's trace format), which a .csv "
                               "name passes off as torch's CSV"),
    "profile -o yaml": (["profile", "--p", "2", "--m", "2", "-o", "{d}/p.yaml"],  # it held TOML
                        "profile writes a problem file as TOML or JSON: name it .toml or .json"),
    "profile demo flag with a module": (["profile", "--p", "2", "--m", "2", "--module", "x:y",
                                         "--layers", "3"],
                                        "--layers describes a demo model; --module x:y replaces it"),
    "profile transformer flag for the mlp": (["profile", "--p", "2", "--m", "2", "--vocab", "7"],
                                             "--vocab applies to --model transformer only"),
    "profile --module without :": (["profile", "--p", "2", "--m", "2", "--module", "mymod"],
                                   "--module mymod: expected PKG.MOD:FUNC"),
    "profile too few layers": (["profile", "--p", "8", "--m", "2", "--layers", "1"],
                               "(--model mlp with --layers 1, a block being 2 layers (a Linear, a Tanh)) "
                               "has 2 layers, fewer than the p*v = 8"),
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
    "csv layout without csv": (["baseline", "1f1b", "--p", "2", "--m", "4", "--csv-layout", "compact"],
                               "--csv-layout applies to --csv only"),
    "trace unit without trace": (["baseline", "1f1b", "--p", "2", "--m", "4", "--trace-unit", "1"],
                                 "--trace-unit applies to --trace only"),
    "trace unit": (["baseline", "1f1b", "--p", "2", "--m", "4", "--trace", "{d}/t.json",
                    "--trace-unit", "-1"], "--trace-unit must be at least 1e-100, got -1"),
    "tiny trace unit": (["baseline", "1f1b", "--p", "2", "--m", "4", "--trace", "{d}/t.json",
                         "--trace-unit", "1e-400"], "--trace-unit must be at least 1e-100"),
}


@pytest.mark.parametrize("case", ERROR_CASES, ids=list(ERROR_CASES))
def test_bad_input_is_one_line_on_stderr_and_exit_1(capsys, bad_files, case):
    argv, message = ERROR_CASES[case]
    code, out, err = run(capsys, *(a.format(d=bad_files) for a in argv))
    assert code == 1
    assert err.startswith("schedc: error: ") and err.count("\n") == 1 and message.format(d=bad_files) in err
    assert "Traceback" not in out + err and len(err) < 400 + len(str(bad_files))


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


def test_a_plan_over_its_cap_is_told_a_fix_that_works_for_its_input(capsys, tmp_path):
    """A plan JSON whose cap was lowered was told to give --mem none, which a JSON plan refuses
    ('problem options apply to CSV plans only'); the fix it is told now writes the file."""
    data = json.loads(plan_text(baseline_plan("1f1b", Problem(p=4, m=8))))
    over, out = tmp_path / "over.json", str(tmp_path / "out.json")
    over.write_text(json.dumps({**data, "problem": {**data["problem"], "mem": 2}}))
    code, _, err = run(capsys, "show", str(over), "-o", out)
    assert code == 1 and "raise the cap in the plan file's problem (its \"mem\"), or leave out -o" in err
    assert "--mem none" not in err and not os.path.exists(out)
    over.write_text(json.dumps({**data, "problem": {**data["problem"], "mem": 4}}))
    assert run(capsys, "show", str(over), "-o", out)[0] == 0 and os.path.exists(out)
    code, _, err = run(capsys, "baseline", "1f1b", "--p", "4", "--m", "8", "--mem", "2", "-o", out + "2")
    assert code == 1 and "give --mem none to write it uncapped, or leave out -o" in err
    assert run(capsys, "baseline", "1f1b", "--p", "4", "--m", "8", "--mem", "none", "-o", out + "2")[0] == 0


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


def test_profile_without_torch_is_one_line(capsys, monkeypatch):
    """``pip install .`` has no torch: profile says what to install (it raised ModuleNotFoundError)."""
    monkeypatch.setitem(sys.modules, "torch", None)  # ``import torch`` now fails as if not installed
    code, out, err = run(capsys, "profile", "--p", "2", "--m", "2")
    assert (code, out) == (1, "")
    assert err.startswith("schedc: error: profile needs torch: pip install torch==2.13.0 (")
    assert err.count("\n") == 1


def test_usage_errors_exit_2_and_help_exits_0(capsys):
    """One line each, naming the subcommand and where its usage is."""
    for argv, message in ((["frobnicate"], "invalid choice: 'frobnicate'"), ([], "required: COMMAND"),
                          (["show", "p.json", "--width", "wide"], "show: argument --width"),
                          (["show", "p.json", "--width", "0"], "must be at least 1"),
                          (["show", "p.json", "--width=-3"], "must be at least 1"),
                          (["show", "p.json", "--width", "100001"], "must be at most 100,000, got 100,001"),
                          (["show", "p.json", "--width", "8_0"], "--width: must be an integer, got '8_0'"),
                          (["show", "p.json", "--width", "\uff18"], "--width: must be an integer"),
                          (["profile", "--p", "2", "--m", "2", "--layers", "1_0"],
                           "profile: argument --layers: must be an integer in ASCII digits, got '1_0'"),
                          (["solve", "--p", "2", "--m", "2", "--objective", "x"],
                           "solve: argument --objective"),
                          (["solve", "--p", "2", "--bogus"], "solve: unrecognized arguments: --bogus "
                                                             "(see schedc solve --help)"),
                          (["solve", "p.toml"], "solve: unrecognized arguments: p.toml (a problem file goes "
                                                "after --problem: schedc solve --problem p.toml; see"),
                          (["compare", "P.JSON"], "(a problem file goes after --problem: schedc compare"),
                          (["show", "p.json", "q.json"], "unrecognized arguments: q.json (see schedc show")):
        code, _, err = run(capsys, *argv)
        assert code == 2 and err.startswith("schedc: error: ") and err.count("\n") == 1 and message in err
    code, out, _ = run(capsys, "--help")
    assert code == 0 and "baseline" in out and "validate" in out


def test_a_byte_order_mark_is_read_past_in_schedcs_files_and_named_in_a_csv(capsys, tmp_path):
    """Windows editors start UTF-8 with U+FEFF: a problem file then failed as "Invalid statement (at
    line 1, column 1)" and a plan as invalid JSON; torch's CSV reader would take it as part of the
    first action, so there it is named rather than dropped."""
    bom = "\ufeff"
    (tmp_path / "p.toml").write_text(bom + "p = 2\nm = 4\n", encoding="utf-8")
    (tmp_path / "p.json").write_text(bom + '{"p": 2, "m": 4}', encoding="utf-8")
    for name in ("p.toml", "p.json"):
        code, out, err = run(capsys, "baseline", "1f1b", "--problem", str(tmp_path / name))
        assert code == 0 and err == "" and "p=2 m=4" in out
    plan = tmp_path / "plan.json"
    plan.write_text(bom + plan_text(baseline_plan("1f1b", Problem(p=2, m=2))), encoding="utf-8")
    code, out, err = run(capsys, "validate", str(plan))
    assert code == 0 and err == "" and out.startswith("OK")
    csv = tmp_path / "plan.csv"
    csv.write_text(bom + "0F0,0I0,0W0\n1F0,1I0,1W0\n", encoding="utf-8")
    code, out, err = run(capsys, "validate", str(csv))
    said = (f"schedc: error: {csv} starts with a byte-order mark (U+FEFF), which torch's CSV reader takes "
            "as part of the first action: save it as UTF-8 without one\n")
    assert code == 1 and out == "" and err == said


def test_an_option_given_dash_dash_as_its_value_is_a_usage_error(capsys):
    """``--p=--``: Python 3.11's argparse stored an empty list, which no converter saw: a traceback
    from --p, --m, --mem, --placement, --time-limit ("'list' object has no attribute 'isascii'"), and
    --problem, --width, --csv-layout silently unset (compare ran without the problem file)."""
    for argv in (["compare", "--p", "2", "--m", "4", "--p=--"], ["compare", "--p", "2", "--mem=--"],
                 ["compare", "--p", "2", "--problem=--"], ["solve", "--p", "2", "--time-limit=--"],
                 ["baseline", "1f1b", "--p", "2", "--show", "--width=--"],
                 ["solve", "--p", "2", "-o=--", "--quiet"]):
        code, out, err = run(capsys, *argv)
        option = argv[-1].split("=")[0] if argv[-1] != "--quiet" else "-o"
        said = f"schedc: error: argument {option}: expected one argument, got '--'\n"
        assert (code, out, err) == (2, "", said)
    code, _, err = run(capsys, "compare", "--p", "2", "--m", "4", "--", "--p=--")  # after --: not an option
    assert code == 2 and "unrecognized arguments: -- --p=--" in err
