# sed -i '288s/("tf", "tb", "tw")/("tf", "tb")/' schedc/cli_profile.py
# sed -i '289s/!= 0 and not comm_given/!= 0 or not comm_given/' schedc/cli_profile.py
# sed -i '289s/ and not comm_given//' schedc/cli_profile.py
# sed -i '296s/ and not mem_given//' schedc/cli_profile.py
# sed -i '294s/if fields.get("mem") is not None and /if /' schedc/cli_profile.py
# sed -i '312s/measured.split and prof.activation_bytes/prof.activation_bytes/' schedc/cli_profile.py
# sed -i '316s/measured.w_mem < share/measured.w_mem <= share/' schedc/cli_profile.py
"""The notes profile prints on what of a --problem file it replaces, and on a w_mem given below the
measured share: each due exactly when the file's value is lost or the given value is too small."""

from __future__ import annotations

import argparse
from fractions import Fraction
from types import SimpleNamespace

import pytest

from schedc.cli import main
from schedc.cli_profile import _note_replaced, _with_given
from schedc.problem import W_MEM, Problem
from schedc.runtime.activation_bytes import StageBytes


def _notes(capsys: pytest.CaptureFixture[str], fields: dict, problem: Problem, comm_given: bool = False,
           mem_given: bool = False, budget: int | None = None) -> str:
    args = argparse.Namespace(problem="in.toml", activation_budget=budget)
    _note_replaced(args, fields, problem, comm_given, mem_given)
    out, err = capsys.readouterr()
    assert out == ""
    return err


def test_costs_at_their_defaults_are_not_noted_as_replaced(capsys: pytest.CaptureFixture[str]) -> None:
    """tf = tb = tw = 1 are the defaults a file may spell out: nothing of the user's is lost, so no
    note; any one cost away from 1, tw included, is replaced and noted."""
    problem = Problem(p=2, m=2)
    assert _notes(capsys, {"tf": 1, "tb": 1, "tw": 1}, problem) == ""
    for key in ("tf", "tb", "tw"):
        err = _notes(capsys, {key: 2}, problem)
        assert err == "schedc: note: the costs in in.toml are replaced by the measured ones\n", key


def test_the_files_latency_is_noted_only_when_a_measured_one_replaces_it(
        capsys: pytest.CaptureFixture[str]) -> None:
    """comm 0 (the default) loses nothing, and a --comm given replaces the file's itself: no note
    in either case; a file's comm 5 with no --comm is replaced by the measured latency."""
    assert _notes(capsys, {"comm": 0}, Problem(p=2, m=2, comm=0)) == ""
    assert _notes(capsys, {"comm": 5}, Problem(p=2, m=2, comm=3), comm_given=True) == ""
    err = _notes(capsys, {"comm": 5}, Problem(p=2, m=2, comm=5))
    assert err == "schedc: note: the comm in in.toml are replaced by the measured ones\n"


def test_the_files_caps_are_noted_only_when_kept_from_the_file_or_replaced_by_a_budget(
        capsys: pytest.CaptureFixture[str]) -> None:
    """A --mem given replaces the file's caps by the user's own numbers, so no note that they are
    kept; a budget without caps in the file replaces nothing of it."""
    problem = Problem(p=2, m=2, mem=Fraction(2))
    assert _notes(capsys, {"mem": 3}, problem, mem_given=True) == ""
    assert _notes(capsys, {}, Problem(p=2, m=2), budget=4096) == ""
    assert "are replaced by those of --activation-budget" in _notes(capsys, {"mem": 3}, problem, budget=4096)
    assert "are kept as numbers, now in units" in _notes(capsys, {"mem": 3}, problem)


def test_a_given_w_mem_equal_to_the_measured_share_passes_without_a_note(
        capsys: pytest.CaptureFixture[str]) -> None:
    """Stages holding after I all they held after F need a w_mem share of 1: a w_mem of 1 given
    covers it (no note, kept), ½ does not (a note, still kept)."""
    held = (StageBytes(forward=100, after_input=100),)
    for w_mem, noted in ((Fraction(1), False), (Fraction(1, 2), True)):
        prof = SimpleNamespace(problem=Problem(p=1, m=2, w_mem=w_mem), activation_bytes=held)
        assert _with_given(prof, {"w_mem": w_mem}, None, w_mem_given=True).w_mem == w_mem
        assert ("runner still holds a w_mem share of 1 after I" in capsys.readouterr().err) == noted


def test_an_unsplit_problem_keeps_its_w_mem(capsys: pytest.CaptureFixture[str]) -> None:
    """Without the split backward no W runs after I, so the measured share after I means nothing:
    the problem keeps its w_mem rather than a share written from bytes the runner never holds."""
    held = (StageBytes(forward=100, after_input=100),)
    prof = SimpleNamespace(problem=Problem(p=1, m=2, split=False), activation_bytes=held)
    assert _with_given(prof, {}, None, w_mem_given=False).w_mem == W_MEM
    split = SimpleNamespace(problem=Problem(p=1, m=2), activation_bytes=held)
    assert _with_given(split, {}, None, w_mem_given=False).w_mem == 1  # measured where it counts
    assert capsys.readouterr().err == ""


def test_an_unsplit_profile_says_its_units_are_for_unsplit_plans(tmp_path, capsys):
    """Its units count F alone and its w_mem is not measured, so caps it wrote let the runner pass
    the budget under a --split override (53,248 bytes against 50,000); the header said "after F or
    I" as for a split profile, and a JSON file, which has no header, said nothing: stderr says it."""
    out = tmp_path / "problem.toml"
    base = ["profile", "--p", "2", "--m", "4", "--layers", "2", "--width", "8", "--microbatch", "4",
            "--repeats", "1", "--comm", "0", "--no-split"]
    assert main([*base, "-o", str(out)]) == 0
    assert "--no-split profile" not in capsys.readouterr().err  # no caps: nothing to say
    header = [line for line in out.read_text().splitlines() if "bytes of one unit" in line]
    assert len(header) == 1 and "after F or I" not in header[0]
    assert "after F; for unsplit plans only: profile without --no-split for split ones" in header[0]
    assert main([*base, "--activation-budget", "50000", "-o", str(tmp_path / "p.json")]) == 0  # no header
    assert capsys.readouterr().err.endswith(
        "schedc: note: a --no-split profile's units count what F holds and it measures no w_mem: its caps "
        "are for unsplit plans; profile without --no-split for split ones\n")
