"""The README's worked example is real output: the deterministic parts of it are rerun here, so the
README cannot drift from the code unnoticed (timings and, with several workers, which order of the
optimal makespan is printed may vary, and are left out)."""

from __future__ import annotations

import shlex
from pathlib import Path

from tests.cli_helpers import run

README = (Path(__file__).parents[1] / "README.md").read_text()
EXAMPLE = README.split("## Worked example", 1)[1].split("\n## ", 1)[0]


def _shown(command: str) -> str:
    """The output the README shows under ``$ command`` (up to the next command or block end)."""
    after = EXAMPLE.split(f"$ {command}\n", 1)[1]
    return after.split("```", 1)[0].split("\n$ ", 1)[0].rstrip("\n") + "\n"


def test_the_compare_table_is_what_compare_prints(capsys):
    command = "schedc compare --p 4 --m 8 --mem 3"
    code, out, _ = run(capsys, *shlex.split(command)[1:])
    assert code == 0 and out == _shown(command)


def test_the_solve_report_is_what_solve_prints(capsys, tmp_path, monkeypatch, repeatable):
    """Every report line but the solving time; one worker, so the search is the same on any load."""
    monkeypatch.chdir(tmp_path)
    command = "schedc solve --p 4 --m 8 --mem 3 -o plan.json --csv plan.csv"
    code, out, err = run(capsys, *shlex.split(command)[1:], "--workers", "1")
    shown = _shown(command).splitlines()
    report = [line for line in shown if not line.startswith(("  best", "solved in"))]
    assert code == 0 and [line for line in out.splitlines() if not line.startswith("solved in")] == report
    assert [line.split()[:6] for line in err.splitlines()][-1] == shown[2].split()[:6]  # the final line
    code, out, _ = run(capsys, "show", "plan.json", "--width", "100")
    summary = _shown("schedc show plan.json --width 100").splitlines()
    assert code == 0 and out.splitlines()[0] == summary[0] and out.splitlines()[-3:] == summary[-3:]
