# sed -i '46s/reject_problem_options(args)/pass/' schedc/cli_plan_input.py
# sed -i '69s/and args.placement is None and not args.problem/and not args.problem/' schedc/cli_plan_input.py
"""Plan inputs of show and validate: problem options beside a plan JSON, and the V-rows hint when
the user chose the placement."""

from __future__ import annotations

from pathlib import Path

from tests.cli_helpers import run


def test_show_refuses_problem_options_beside_a_plan_json(tmp_path: Path, capsys) -> None:
    """A plan JSON carries its problem: ``show plan.json --p 3`` would draw the 2-rank plan and drop
    the --p without a word. validate refuses it in its own code; show goes through plan_from_args."""
    plan = str(tmp_path / "plan.json")
    assert run(capsys, "baseline", "1f1b", "--p", "2", "--m", "4", "-o", plan)[0] == 0
    assert run(capsys, "show", plan)[0] == 0
    code, out, err = run(capsys, "show", plan, "--p", "3")
    assert code == 1 and out == "" and len(err.splitlines()) == 1
    assert "problem options apply to CSV plans only" in err


def test_no_looped_hint_when_the_user_chose_vshape(tmp_path: Path, capsys) -> None:
    """The hint "add --placement looped" is for a --v that clashes with a V the rows imply; when the
    user gave --placement vshape themselves, their --v is at fault and the hint would contradict them."""
    path = tmp_path / "v.csv"
    path.write_text("0F0,3F0,3B0,0B0\n1F0,2F0,2B0,1B0\n")
    code, out, err = run(capsys, "validate", str(path), "--v", "3", "--placement", "vshape")
    assert code == 1 and out == "" and len(err.splitlines()) == 1
    assert "vshape placement needs v = 2" in err and "--placement looped" not in err
    code, _, err = run(capsys, "validate", str(path), "--v", "3")  # the rows' V: the hint applies
    assert code == 1 and "add --placement looped" in err
