# sed -i '188s/plan.lower_bound <= analytic/plan.lower_bound < analytic/' schedc/cli_validate.py
# sed -i '179s/if (claim/if False and (claim/' schedc/cli_validate.py
"""``validate`` on a bound it cannot prove: a bound above the analytic one rests on the file's word
(no schedule it builds beats it, but only a search proves it), and its report says so, where an
edited file's false 'optimal' passed with a bare OK."""

from __future__ import annotations

import json
from pathlib import Path

from schedc.problem_io import problem_from_dict
from schedc.solvers.portfolio import solve
from tests.cli_helpers import run

CLAIM = "note: the lower bound above the analytic 30 is the file's claim"


def _solved(tmp_path: Path, capsys) -> Path:
    path = tmp_path / "plan.json"
    code, _, _ = run(capsys, "solve", "--p", "4", "--m", "8", "--mem", "3", "--quiet", "-o", str(path))
    assert code == 0
    return path


def test_a_solved_bound_above_the_analytic_one_is_called_the_file_s_claim(tmp_path: Path, capsys) -> None:
    code, out, _ = run(capsys, "validate", str(_solved(tmp_path, capsys)))
    assert code == 0 and "lower bound 31   gap 0.0%" in out and CLAIM in out


def test_an_edited_false_optimal_is_ok_but_flagged_as_a_claim(tmp_path: Path, capsys) -> None:
    """The reviewer's file: two forwards swapped (makespan 32), its bound set to 32 and 'optimal',
    where 31 exists. No schedule validate builds is at 31, so only the note tells."""
    data = json.loads(_solved(tmp_path, capsys).read_text())
    ranks = [[token for token, *_ in rank] for rank in data["ranks"]]
    ranks[0][0], ranks[0][1] = ranks[0][1], ranks[0][0]
    edited = {**{k: v for k, v in data.items() if k not in ("makespan", "peak_mem")}, "ranks": ranks,
              "lower_bound": 32, "status": "optimal"}
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(edited))
    assert solve(problem_from_dict(data["problem"]), time_limit=5, workers=1).makespan == 31
    code, out, _ = run(capsys, "validate", str(path))
    assert code == 0 and "makespan 32" in out and "lower bound 32   gap 0.0%" in out and CLAIM in out


def test_no_note_where_the_bound_is_the_analytic_one_or_absent(tmp_path: Path, capsys) -> None:
    plan, csv = tmp_path / "b.json", tmp_path / "b.csv"
    code, _, _ = run(capsys, "baseline", "1f1b", "--p", "4", "--m", "8", "-o", str(plan), "--csv", str(csv))
    assert code == 0
    for path in (plan, csv):
        code, out, _ = run(capsys, "validate", str(path))
        assert code == 0 and out.startswith("OK:") and "note: the lower bound" not in out, path
