# sed -i '255s/str(overrides\[name\]) != str(files\[name\])/True/' schedc/cli_problem.py
# sed -i '259s/if name in base else/if name not in base else/' schedc/cli_problem.py
# sed -i '260s/and "mem" not in overrides//' schedc/cli_problem.py
# sed -i '251s/if base.get("stage_costs") is None:/if False:/' schedc/cli_problem.py
"""A --p, --v or --placement that overrides a problem file's over per-stage costs (as many stages):
``schedc profile`` measures costs and caps at the ranks' boundaries, so a note says another layout
moves them; nothing where the layout stays or the file has no per-stage costs."""

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
    assert "per-stage costs that schedc profile measured hold for the ranks they were measured on" in err
    assert "profile again with these flags" in err and " caps" not in err  # the file has none
    assert "override" not in _solve(tmp_path, capsys, looped, "--placement", "looped", "--p", "2")
    implicit = "p = 2\nm = 4\nv = 2\n" + COSTS
    assert "overrides placement = looped (by default)" in _solve(tmp_path, capsys, implicit, "--placement",
                                                               "vshape")
    vshape = 'p = 2\nm = 4\nv = 2\nplacement = "vshape"\n' + COSTS
    assert "--placement looped overrides placement = vshape in" in _solve(
        tmp_path, capsys, vshape, "--placement", "looped")


def test_another_p_and_v_with_as_many_stages_is_noted_with_the_caps(tmp_path, capsys) -> None:
    """p = 4 at v = 1 has the stages of p = 2 at v = 2: the costs load, each rank holds other stages."""
    wide = "p = 4\nm = 4\nmem = [2]\n" + COSTS
    err = _solve(tmp_path, capsys, wide, "--p", "2", "--v", "2")
    assert err.startswith("schedc: note: --p 2 --v 2 override p = 4, v = 1 (by default) in ")
    assert "per-stage costs and caps that schedc profile measured" in err
    assert "the bytes each rank holds" in err
    err = _solve(tmp_path, capsys, wide, "--p", "2", "--v", "2", "--mem", "3")
    assert "per-stage costs that schedc profile" in err and "bytes" not in err  # the caps are the flag's


def test_no_note_without_per_stage_costs(tmp_path, capsys) -> None:
    plain = 'p = 2\nm = 4\nv = 2\nplacement = "looped"\ntf = 2\n'
    assert "overrides placement" not in _solve(tmp_path, capsys, plain, "--placement", "vshape")
