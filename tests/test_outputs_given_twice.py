# sed -i '58s/, action=Once//' schedc/cli_outputs.py
# sed -i '101s/, action=Once//' schedc/cli_profile.py
# sed -i '20s/is not None/is None/' schedc/cli_once.py
# sed -i '65s/, action=Once//' schedc/cli_problem.py
# sed -i '76s/, action=OnceValue//' schedc/cli_profile.py
# sed -i '30s/give it once/one file each/' schedc/cli_once.py
"""An output option, a problem file or profile's model given twice is refused in one line (exit 2,
argparse's status), before any work and with nothing written: argparse alone keeps the last value
and drops the first without a word (``--plot a.png --plot b.png`` drew only b.png; ``--problem
a.toml --problem b.json`` planned b.json's problem alone)."""

from __future__ import annotations

import pytest

from tests.cli_helpers import SEED, run

TWICE = [("-o", "a.json", "b.json"), ("--output", "a.json", "b.json"), ("--csv", "a.csv", "b.csv"),
         ("--trace", "a.trace", "b.trace"), ("--plot", "a.png", "b.png")]


@pytest.mark.parametrize("command", [["solve", *SEED, "--quiet"], ["baseline", "1f1b", *SEED]])
@pytest.mark.parametrize(("flag", "first", "then"), TWICE)
def test_an_output_named_twice_is_one_line_and_nothing_is_written(capsys, tmp_path, monkeypatch, command,
                                                                   flag, first, then):
    monkeypatch.chdir(tmp_path)
    code, out, err = run(capsys, *command, flag, first, flag, then)
    assert (code, out) == (2, "") and len(err.splitlines()) == 1
    assert f"given twice ({first}, then {then}): one file each" in err and list(tmp_path.iterdir()) == []


def test_profile_refuses_its_problem_file_named_twice(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, _, err = run(capsys, "profile", "--p", "2", "--m", "2", "-o", "a.toml", "--output", "b.toml")
    assert code == 2 and "argument -o/--output: given twice (a.toml, then b.toml)" in err
    assert list(tmp_path.iterdir()) == []


def test_each_output_once_is_still_taken(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, _, _ = run(capsys, "baseline", "1f1b", *SEED, "-o", "a.json", "--csv", "a.csv",
                     "--trace", "a.trace")
    assert code == 0 and sorted(p.name for p in tmp_path.iterdir()) == ["a.csv", "a.json", "a.trace"]


@pytest.mark.parametrize("command", [["solve", "--time-limit", "1", "--quiet", "-o", "plan.json"],
                                     ["baseline", "1f1b", "-o", "plan.json"], ["compare"]])
def test_a_problem_file_named_twice_is_one_line(capsys, tmp_path, monkeypatch, command):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.toml").write_text("p = 2\nm = 4\nmem = [3, 2.5]\n")
    (tmp_path / "b.json").write_text('{"p": 2, "m": 8}')
    code, out, err = run(capsys, *command, "--problem", "a.toml", "--problem", "b.json")
    assert (code, out) == (2, "") and len(err.splitlines()) == 1
    assert "argument --problem: given twice (a.toml, then b.json): one file each" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.toml", "b.json"]


def test_profile_refuses_two_models(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, err = run(capsys, "profile", "--p", "2", "--m", "2", "--module", "a:f", "--module", "b:g",
                         "-o", "a.toml")
    assert (code, out) == (2, "") and len(err.splitlines()) == 1
    assert "argument --module: given twice (a:f, then b:g): give it once" in err
    assert list(tmp_path.iterdir()) == []
