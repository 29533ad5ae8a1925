# sed -i '74s/, action=Once//' schedc/cli_common.py
# sed -i '92s/, action=Once//' schedc/cli_profile.py
# sed -i '16s/is not None/is None/' schedc/cli_once.py
"""An output option given twice is refused in one line (exit 2, argparse's status), before any work
and with nothing written: argparse alone keeps the last file and drops the first without a word
(``--plot a.png --plot b.png`` drew only b.png)."""

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
