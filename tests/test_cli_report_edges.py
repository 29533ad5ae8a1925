# sed -i '66s/any(c is not None/all(c is not None/' schedc/cli_baselines.py
# sed -i '170s/total > 1/total > 0/' schedc/cli_validate.py
# sed -i '35s/min(shutil/max(shutil/' schedc/cli_show.py
# sed -i '67s/value > MAX_COLUMNS/value >= MAX_COLUMNS/' schedc/cli_show.py
"""``schedc compare`` and ``validate`` report lines, and --width's upper end, at their boundaries."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from rich.console import Console

from schedc import cli_baselines, cli_show, save_plan
from schedc.baselines import applicable, baseline_plan
from schedc.cli import main
from schedc.cli_summary import peaks, print_table
from schedc.exact import fmt, percent
from schedc.problem import Problem
from schedc.solvers.bounds import lower_bound
from tests.cli_helpers import run


def test_compare_labels_the_bound_within_the_cap_when_only_some_ranks_are_capped(
        capsys: pytest.CaptureFixture[str]) -> None:
    """One capped rank is a cap: the bound compare prints is the capped one, and must be labelled so
    (checking that every rank is capped dropped the label for caps such as none,3,3,3)."""
    problem = Problem(p=4, m=8, mem=(None, 3, 3, 3))
    assert main(["compare", "--p", "4", "--m", "8", "--mem", "none,3,3,3"]) == 0
    out = capsys.readouterr().out
    assert f"lower bound on the makespan within the cap: {fmt(lower_bound(problem))}" in out
    assert main(["compare", "--p", "4", "--m", "8"]) == 0  # no cap at all: no label
    out = capsys.readouterr().out
    assert f"lower bound on the makespan: {fmt(lower_bound(Problem(p=4, m=8)))}" in out


def test_validate_counts_a_single_error_in_the_singular(capsys: pytest.CaptureFixture[str],
                                                        tmp_path: Path) -> None:
    """A plan with one error (a deadlock, listed once) ends "INVALID: 1 error", not "1 errors"."""
    path = tmp_path / "p.json"
    save_plan(baseline_plan("1f1b", Problem(p=2, m=4)), str(path))
    data = json.loads(path.read_text())
    data["ranks"][0].insert(0, data["ranks"][0].pop(-1))  # a backward first: waits for its forward
    path.write_text(json.dumps(data))
    assert main(["validate", str(path)]) == 1
    lines = capsys.readouterr().out.strip().splitlines()
    assert sum("deadlock" in line for line in lines) == 1
    assert lines[-1] == "INVALID: 1 error"


def test_the_largest_width_is_accepted(capsys: pytest.CaptureFixture[str]) -> None:
    """--width's documented limit is "at most 100,000": that value itself must draw the timeline, not
    be refused (an off-by-one in the check refused it)."""
    widest = str(cli_show.MAX_COLUMNS)
    assert main(["baseline", "1f1b", "--p", "2", "--m", "2", "--show", "--width", widest]) == 0
    out, err = capsys.readouterr()
    assert err == "" and out.startswith("1f1b")
    assert main(["baseline", "1f1b", "--p", "2", "--m", "2", "--show",
                 "--width", str(cli_show.MAX_COLUMNS + 1)]) == 2
    assert "must be at most 100,000" in capsys.readouterr().err


def test_the_default_width_is_the_terminals(capsys: pytest.CaptureFixture[str],
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """Without --width the timeline fits the terminal (COLUMNS here): taking the larger of it and
    the 100,000-column limit printed lines of 100,000 characters on every terminal."""
    monkeypatch.setenv("COLUMNS", "60")  # a timeline of makespan 98 needs more: it is condensed
    assert main(["baseline", "1f1b", "--p", "2", "--m", "32", "--show"]) == 0
    lines = capsys.readouterr().out.splitlines()
    rows = [line for line in lines if line.startswith(("r0 ", "r1 "))]
    assert len(rows) == 2 and max(len(row) for row in rows) <= 60


@pytest.mark.parametrize("width", [30, 60, 80])
@pytest.mark.parametrize("problem", [Problem(p=8, m=32, v=2, mem=4), Problem(p=16, m=32, v=2),
                                     Problem(p=4, m=8, v=3)])
def test_compare_never_cuts_or_drops_a_name_or_figure_on_a_narrow_terminal(problem: Problem,
                                                                           width: int) -> None:
    """On 80 columns rich shortened both interleaved schedules to 'interle…' (and the headers), and
    once names kept their width it dropped the whole peaks column below 58: the peaks wrap, and a
    table narrower than its least width is printed at that width."""
    plans = [baseline_plan(name, problem) for name in applicable(problem)]
    console = Console(width=width, soft_wrap=True, record=True, file=io.StringIO())
    print_table(console, cli_baselines._compare_table(plans))
    text = console.export_text()
    rows = [line.split() for line in text.splitlines()]
    words = {word for row in rows for word in row}
    assert "…" not in text and all(set(column.split()) <= words for column in cli_baselines.COMPARE_COLUMNS)
    assert [row[:4] for row in rows if row[:1] in ([plan.source] for plan in plans)] == [
        [plan.source, fmt(plan.makespan), percent(plan.timeline.bubble), fmt(plan.timeline.max_span)]
        for plan in plans]
    assert all(set(peaks(plan).split()) <= words for plan in plans)


def test_a_written_names_escapes_are_shown_not_sent_to_the_terminal(capsys, tmp_path):
    """The "wrote" line printed an output name's escape sequence raw (errors escaped it)."""
    path = str(tmp_path / "o\x1b[31m.json")
    code, out, _ = run(capsys, "baseline", "1f1b", "--p", "2", "--m", "2", "-o", path)
    assert code == 0 and out.endswith(f"wrote {tmp_path}/o\\x1b[31m.json\n") and "\x1b" not in out
