# sed -i '227s/base.get("stage_costs") is not None and moved/moved/' schedc/cli_problem.py
# sed -i '225s/base.get("placement", "looped")/base.get("placement", "vshape")/' schedc/cli_problem.py
# sed -i '226s/!= files/== files/' schedc/cli_problem.py
"""A --placement that overrides a problem file's, over per-stage costs: ``schedc profile`` measured
them (and the caps) at the file's rank boundaries, so a note says the other placement moves them;
nothing where the placement stays or the file has no per-stage costs."""

from __future__ import annotations

import pytest

from schedc.cli import main

COSTS = """stage_costs = [
  {tf = 85, tb = 29, tw = 135}, {tf = 38, tb = 211, tw = 114},
  {tf = 30, tb = 253, tw = 136}, {tf = 109, tb = 329, tw = 189},
]
"""


def _solve(tmp_path, capsys: pytest.CaptureFixture[str], text: str, *flags: str) -> str:
    path = tmp_path / "problem.toml"
    path.write_text(text)
    assert main(["solve", "--problem", str(path), "--time-limit", "0.5", "--quiet", *flags]) == 0
    return capsys.readouterr().err


def test_another_placement_over_profiled_costs_is_noted(tmp_path, capsys) -> None:
    looped = 'p = 2\nm = 4\nv = 2\nplacement = "looped"\n' + COSTS
    err = _solve(tmp_path, capsys, looped, "--placement", "vshape")
    assert err.count("\n") == 1 and err.startswith(
        "schedc: note: --placement vshape overrides placement = looped in ")
    assert "profile with --placement vshape for this one" in err
    assert "overrides placement" not in _solve(tmp_path, capsys, looped, "--placement", "looped")
    implicit = "p = 2\nm = 4\nv = 2\n" + COSTS  # looped by default
    assert "overrides placement = looped" in _solve(tmp_path, capsys, implicit, "--placement", "vshape")
    vshape = 'p = 2\nm = 4\nv = 2\nplacement = "vshape"\n' + COSTS
    assert "--placement looped overrides placement = vshape" in _solve(
        tmp_path, capsys, vshape, "--placement", "looped")


def test_no_note_without_per_stage_costs(tmp_path, capsys) -> None:
    plain = 'p = 2\nm = 4\nv = 2\nplacement = "looped"\ntf = 2\n'
    assert "overrides placement" not in _solve(tmp_path, capsys, plain, "--placement", "vshape")
