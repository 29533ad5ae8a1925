"""The schedc command line, run in-process through main() (plus one subprocess for the entry point)."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import pytest

from schedc import cli_solve, cli_validate, load_plan
from schedc.baselines import baseline_plan
from schedc.cli import main
from schedc.errors import ProblemError
from schedc.plan_json import save_plan
from schedc.problem import Problem
from schedc.solvers.bounds import lower_bound
from schedc.torch_csv import read_csv_orders
from tests.cli_helpers import SEED, parse_problem, run

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
    """The seed article's GPipe table, with the backwards in PyTorch's order (the article's figure
    runs them in reverse: a relabelling with the same times)."""
    code, out, _ = run(capsys, "baseline", "gpipe", *SEED, "--show", "--width", "80")
    assert code == 0
    assert "r0 F0 F1 F2 F3 __ __ B0 B1 B2 B3" in out and "peak activation per rank: 4 4" in out


def test_compare_lists_every_applicable_baseline_with_its_numbers(capsys):
    code, out, _ = run(capsys, "compare", *SEED, "--mem", "3")
    assert code == 0
    rows = {row[0]: row for row in map(str.split, out.splitlines()) if row[:1] in (["gpipe"], ["1f1b"])}
    assert rows["gpipe"] == ["gpipe", "10", "20.0%", "10", "4", "4", "NO"]
    assert rows["1f1b"] == ["1f1b", "10", "20.0%", "10", "2", "1", "yes"]
    assert "best that fits: 1f1b (makespan 10)" in out
    assert all(line == line.rstrip() for line in out.splitlines())  # the README's text, byte for byte
    assert "\x1b[" not in out  # no colour codes when not a terminal
    code, out, _ = run(capsys, "compare", "--p", "4", "--m", "8")  # several fit: the fastest is named
    fits = {row[0]: int(row[1]) for row in map(str.split, out.splitlines()) if row[-1:] == ["yes"]}
    assert code == 0 and len(set(fits.values())) > 1
    assert f"best that fits: zb-h1 (makespan {min(fits.values())})" in out


def test_compare_keeps_every_column_at_40_ranks(capsys):
    """40 peaks in a column that could not wrap squeezed the schedule names out of the table."""
    code, out, _ = run(capsys, "compare", "--p", "40", "--m", "40", "--mem", "2")
    rows = {row[0]: row for row in map(str.split, out.splitlines()) if row[:1] in (["gpipe"], ["1f1b"])}
    assert code == 0 and rows["gpipe"][:6] == ["gpipe", "198", "39.4%", "198", "40", "×40"]
    assert rows["1f1b"][-1] == "NO"  # the peaks wrap onto the next lines, the last column stays


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


def test_csv_layouts_from_the_cli(capsys, tmp_path):
    lockstep, compact = tmp_path / "lockstep.csv", tmp_path / "compact.csv"
    for path, extra in ((lockstep, ()), (compact, ("--csv-layout", "compact"))):
        assert run(capsys, "baseline", "gpipe", "--p", "3", "--m", "4", "--csv", str(path), *extra)[0] == 0
    assert ",," in lockstep.read_text() and ",," not in compact.read_text()
    assert [[c for c in row.split(",") if c] for row in lockstep.read_text().splitlines()] == \
        [row.split(",") for row in compact.read_text().splitlines()]


def test_validate_ok_prints_the_figures(capsys, seed_files):
    code, out, _ = run(capsys, "validate", seed_files["json"])
    assert code == 0 and out.startswith("OK")
    assert "makespan 10" in out and "peak activation per rank: 2 1" in out
    assert "\nlower bound " in out  # the file's bound, checked as it loaded (it was not shown)
    code, out, _ = run(capsys, "validate", seed_files["csv"], "--problem", seed_files["json"])
    assert code == 0 and out.startswith("OK") and "lower bound" not in out  # a CSV holds orders only


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


def test_validate_of_a_flawed_plan_reads_its_numbers_exactly_as_show_does(capsys, seed_files, tmp_path):
    """Re-reading a flawed plan to list its errors parsed 1e-400 as the float 0 ("costs need tf > 0")
    and missed the real error, which load_plan had found."""
    text = Path(seed_files["json"]).read_text()
    assert '"tf": 1,' in text
    bad = tmp_path / "tiny_tf.json"
    bad.write_text(text.replace('"tf": 1,', '"tf": 1e-400,'))
    code, out, _ = run(capsys, "validate", str(bad))
    assert code == 1 and "tf > 0" not in out and "exceeds the plan's makespan" in out


def test_a_peak_just_over_its_cap_is_not_rounded_to_the_cap(capsys):
    """zb-h1 peaks at 3.5 + 1e-9 on rank 1 when W keeps a share a hair over 1/2 (rank 2 at 3 + 2e-9: "~3")."""
    flags = ["--p", "4", "--m", "8", "--mem", "3.5", "--w-mem", "0.500000001"]
    code, out, _ = run(capsys, "compare", *flags)
    assert code == 0 and "4 3.500000001 ~3 2.5" in out
    code, out, _ = run(capsys, "baseline", "zb-h1", *flags)
    assert "peak activation per rank: 4 3.500000001 ~3 2.5   (cap: 3.5)" in out
    code, out, _ = run(capsys, "baseline", "zb-h1", *flags[:4], "--mem", "3.5,3.5,3,3", *flags[-2:])
    assert "peak activation per rank: 4 3.500000001 3.000000002 2.5   (cap: 3.5 3.5 3 3)" in out  # not ~3
    code, out, _ = run(capsys, "compare", "--p", "4", "--m", "8", "--mem", "3.5")
    assert "4 3.5 3 2.5" in out  # equal to the cap: rounded as ever
    thirds = ["--mem", "8/3,7/3", "--w-mem", "1/3", "--quiet"]
    code, out, _ = run(capsys, "solve", "--p", "2", "--m", "4", *thirds)
    assert "peak activation per rank: 8/3 2   (cap: 8/3 7/3)" in out  # at its cap: as it reads (not 2.667)


def test_validate_counts_every_error_and_lists_the_first(capsys, tmp_path, monkeypatch):
    plan = tmp_path / "short.csv"
    plan.write_text("0F0\n1F0\n")
    code, out, _ = run(capsys, "validate", str(plan), "--p", "2", "--m", "20")
    lines = out.strip().splitlines()
    shown = cli_validate.SHOWN_ERRORS
    assert code == 1 and len(lines) == shown + 2
    assert lines[-2] == f"... and {6 * 20 - 2 - shown} more" and lines[-1] == "INVALID: 118 errors"
    monkeypatch.setattr(importlib.import_module("schedc.validate"), "LISTED_MISSING", 5)
    code, out, _ = run(capsys, "validate", str(plan), "--p", "2", "--m", "20")
    lines = out.strip().splitlines()  # five missing, one line for the other 113, the count
    assert code == 1 and len(lines) == 7 and lines[-2].endswith(": ... and 113 more missing actions")
    assert lines[-1] == "INVALID: 118 errors"
    monkeypatch.setattr(importlib.import_module("schedc.simulate"), "SPARSE_TASKS", 100)
    code, out, _ = run(capsys, "validate", str(plan), "--p", "2", "--m", "20")  # not even half the tasks
    assert code == 1 and out.strip().splitlines() == [
        f"{plan}: plan has 2 actions for the 120 tasks of p=2 m=20 v=1 looped split tf=1 tb=1 tw=1 comm=0 "
        "mem=none: at least 118 are missing", "INVALID: at least 118 errors"]


def test_unprintable_sources_print_escaped_on_one_line(capsys, tmp_path):
    """A CSV's name is its plan's source: a tab or an undecodable byte in it is legal, and an escape
    sequence in a plan file's source must not colour the terminal."""
    csv_path = tmp_path / "a\tb\udce9.csv"  # the surrogate: a file name byte that is not UTF-8
    csv_path.write_text(Path(run_seed_csv(capsys, tmp_path)).read_text())
    code, out, _ = run(capsys, "validate", str(csv_path), *SEED)
    assert code == 0 and out.startswith("OK")
    code, out, _ = run(capsys, "show", str(csv_path), *SEED)
    assert code == 0 and out.splitlines()[0].startswith(f"csv:{tmp_path}/a\\tb\\udce9.csv (orders only)")
    plan = json.loads((tmp_path / "p.json").read_text())
    plan["source"] = "x\x1b[31m"
    (tmp_path / "esc.json").write_text(json.dumps(plan))
    code, out, _ = run(capsys, "show", str(tmp_path / "esc.json"))
    assert code == 0 and out.splitlines()[0].startswith("x\\x1b[31m (heuristic)") and "\x1b" not in out


def run_seed_csv(capsys, tmp_path) -> str:
    """The seed's 1F1B written as p.json and p.csv; the CSV's path."""
    assert run(capsys, "baseline", "1f1b", *SEED, "-o", str(tmp_path / "p.json"),
               "--csv", str(tmp_path / "p.csv"))[0] == 0
    return str(tmp_path / "p.csv")


def test_an_old_plan_files_list_of_equal_caps_takes_another_p(tmp_path):
    """Plan files before d46c57d wrote one cap as a list per rank; --p may still change the rank count,
    but caps that differ per rank cannot follow it."""
    assert main(["baseline", "1f1b", "--p", "2", "--m", "2", "-o", str(tmp_path / "p.json")]) == 0
    plan = json.loads((tmp_path / "p.json").read_text())
    for caps, expected in (([None, None], (None,) * 4), ([3, 3], (3,) * 4)):
        plan["problem"]["mem"] = caps
        (tmp_path / "old.json").write_text(json.dumps(plan))
        assert parse_problem("--problem", str(tmp_path / "old.json"), "--p", "4").mem == expected
    plan["problem"]["mem"] = [3, 2]
    (tmp_path / "old.json").write_text(json.dumps(plan))
    with pytest.raises(ProblemError, match="mem gives 2 caps for 4 ranks"):
        parse_problem("--problem", str(tmp_path / "old.json"), "--p", "4")


def test_a_problem_file_named_in_capitals_is_read_by_its_extension(tmp_path):
    (tmp_path / "P.JSON").write_text('{"p": 3, "m": 2}')
    assert parse_problem("--problem", str(tmp_path / "P.JSON")).p == 3


def test_validate_names_a_false_status_beside_the_cap_errors(capsys, tmp_path):
    """A solver's plan whose cap was lowered in the file: validate listed the cap errors only, where
    show named the status 'optimal' that the orders disprove; a deadlock is still listed once."""
    solved = tmp_path / "plan.json"
    assert run(capsys, "solve", "--p", "4", "--m", "8", "--mem", "3", "-o", str(solved))[0] == 0
    data = json.loads(solved.read_text())
    assert data["status"] == "optimal"
    data["problem"]["mem"] = 2
    (tmp_path / "low.json").write_text(json.dumps(data))
    code, out, _ = run(capsys, "validate", str(tmp_path / "low.json"))
    assert code == 1 and "exceeds the cap 2" in out and "INVALID: 4 errors" in out
    assert "status optimal claims a solver's plan within the cap" in out
    data = json.loads(solved.read_text())
    data["ranks"][0].insert(0, data["ranks"][0].pop(-1))  # a backward first: waits for its forward
    (tmp_path / "stuck.json").write_text(json.dumps(data))
    code, out, _ = run(capsys, "validate", str(tmp_path / "stuck.json"))
    assert code == 1 and out.count("deadlock") == 1 and "INVALID: 1 error" in out


def test_validate_lists_every_error_whatever_the_plans_status(capsys, tmp_path):
    """tf edited from 1 to 2 in a solver's plan: with status 'optimal' validate listed only the
    status's bound (1 error), where a heuristic copy of the same file listed the 32 forwards' times;
    the recorded makespan (31 against the replay's 46) was listed in neither."""
    solved = tmp_path / "plan.json"
    assert run(capsys, "solve", "--p", "4", "--m", "8", "--mem", "3", "-o", str(solved))[0] == 0
    data = json.loads(solved.read_text())
    assert (data["status"], data["makespan"]) == ("optimal", 31)
    data["problem"]["tf"] = 2
    outs = []
    for status in ("optimal", "heuristic"):
        (tmp_path / f"{status}.json").write_text(json.dumps({**data, "status": status}))
        code, out, _ = run(capsys, "validate", str(tmp_path / f"{status}.json"))
        outs.append(out)
        assert code == 1 and "recorded makespan 31 differs from the replay's 46" in out
        assert out.count("lasts 1, its cost is 2") + int(out.split("... and ")[1].split()[0]) >= 32
    assert "INVALID: 34 errors" in outs[0] and "status optimal needs lower_bound equal to" in outs[0]
    assert "INVALID: 33 errors" in outs[1] and "status optimal" not in outs[1]


def test_validate_names_what_the_flags_override_in_a_csvs_rows(capsys, tmp_path):
    """--m 4 on a CSV whose rows give m = 8 listed 48 'not a task' errors without their one cause."""
    csv, vshape = str(tmp_path / "b.csv"), str(tmp_path / "z.csv")
    assert run(capsys, "baseline", "1f1b", "--p", "4", "--m", "8", "--csv", csv)[0] == 0
    code, out, _ = run(capsys, "validate", csv, "--m", "4")
    assert code == 1 and f"{csv}: its rows give m = 8 (from 0F7 on rank 0), where the problem has m = 4 " \
        "from a flag; the errors below follow the problem" in out
    assert out.splitlines()[0].startswith(f"{csv}: its rows give")  # the note comes first: "below"
    (tmp_path / "m4.toml").write_text("p = 4\nm = 4\n")
    code, out, _ = run(capsys, "validate", csv, "--problem", str(tmp_path / "m4.toml"))
    assert code == 1 and f"the problem has m = 4 from the problem file {tmp_path / 'm4.toml'};" in out
    code, out, _ = run(capsys, "validate", csv, "--problem", str(tmp_path / "m4.toml"), "--m", "2")
    assert code == 1 and "the problem has m = 2 from a flag;" in out  # the flag, not the file
    assert run(capsys, "baseline", "zb-v", "--p", "4", "--m", "8", "--v", "2", "--placement", "vshape",
               "--csv", vshape)[0] == 0
    code, out, _ = run(capsys, "validate", vshape, "--placement", "looped")
    assert code == 1 and "its rows give placement = vshape, where the problem has placement = looped" in out
    code, out, _ = run(capsys, "validate", csv, "--m", "8")
    assert code == 0 and "rows give" not in out
    (tmp_path / "fwd.csv").write_text("0F0\n1F0\n")  # no backward yet: the rows do not decide the split
    code, out, _ = run(capsys, "validate", str(tmp_path / "fwd.csv"), "--no-split", "--m", "1")
    assert code == 1 and "rows give" not in out


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


def test_subcommands_from_other_modules_are_registered_and_dispatched(capsys, monkeypatch):
    def register(subparsers):
        parser = subparsers.add_parser("solve")
        parser.set_defaults(func=lambda args: print("solved") or 7)

    monkeypatch.setattr(cli_solve, "register", register)
    assert run(capsys, "solve") == (7, "solved\n", "")


def test_python_m_schedc_runs_and_never_imports_torch_or_matplotlib(tmp_path):
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
    assert not {name for name in imported if name.split(".")[0] in ("torch", "matplotlib")}


def test_a_gap_or_bubble_above_zero_never_prints_as_zero():
    """A feasible plan within 1e-5 of its bound printed "gap 0.0%", as a proven one does."""
    from fractions import Fraction

    from schedc.exact import percent

    shown = [percent(Fraction(0)), percent(Fraction(1, 10**5)), percent(Fraction(1, 1000))]
    assert shown == ["0.0%", "<0.1%", "0.1%"]
    assert percent(Fraction(1, 2)) == "50.0%"
    nearly = [percent(1 - Fraction(1, 10**5)), percent(Fraction(1)), percent(Fraction(999, 1000))]
    assert nearly == [">99.9%", "100.0%", "99.9%"]  # a bubble below 1 printed as 100.0%


def test_the_bound_of_a_baseline_over_its_cap_says_what_it_holds_for(capsys, tmp_path):
    """A baseline over its cap carries the uncapped bound (a capped one could exceed its makespan),
    which was labelled "for plans within the cap" while compare printed the capped one, higher;
    then "with or without the cap", which read as if the cap cost nothing: both are named."""
    code, out, _ = run(capsys, "baseline", "1f1b", "--p", "4", "--m", "8", "--mem", "3")
    assert code == 0 and "lower bound 27 (without the cap; 30 for plans within it)" in out
    assert "(+2 more ranks)" not in out and "rank 0 position 3" in out  # 1f1b peaks 4 3 2 1: one over
    code, out, _ = run(capsys, "baseline", "1f1b", "--p", "4", "--m", "8", "--mem", "2")
    assert code == 0 and "(+1 more rank)" in out
    code, out, _ = run(capsys, "baseline", "gpipe", "--p", "4", "--m", "8", "--mem", "7")
    assert code == 0 and "(with or without the cap)" in out  # the cap adds nothing to this bound
    half = tmp_path / "half.json"  # a cap no plan fits (the CLI refuses it; a Python caller need not)
    save_plan(baseline_plan("1f1b", Problem(p=2, m=4, mem=Fraction(1, 2))), str(half))
    code, out, _ = run(capsys, "show", str(half))
    assert code == 0 and "lower bound 13 (without the cap; no plan fits a cap below 1)" in out
    code, out, _ = run(capsys, "baseline", "1f1b", "--p", "2", "--m", "4", "--mem", "1")  # the least cap
    within = lower_bound(Problem(p=2, m=4, mem=(1,)))
    assert code == 0 and f"lower bound 13 (without the cap; {within} for plans within it)" in out
    code, out, _ = run(capsys, "compare", "--p", "4", "--m", "8", "--mem", "3")
    assert code == 0 and "lower bound on the makespan within the cap: 30" in out
