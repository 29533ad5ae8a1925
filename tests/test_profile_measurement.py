# sed -i '191s/_w_mem_given(given, file_fields)/_w_mem_given(given, {})/' schedc/cli_profile.py
# sed -i '359s/not args.module or/not args.module and/' schedc/cli_profile.py
# sed -i '359s/ or is_out_of_memory(err)//' schedc/cli_profile.py
# sed -i '355s/enabled=dtype is not None/enabled=dtype is None/' schedc/cli_profile.py
"""What profile measures under its flags: autocast only when asked, the file's own w_mem kept, and a
--module's failures named for what they are (schedc's checks, memory) rather than as the model's."""

from __future__ import annotations

import sys
import tomllib
from fractions import Fraction
from pathlib import Path

import pytest

from schedc.cli import main

MODULE = """\
import torch
from torch import nn

seen = []

class Probe(nn.Linear):
    def forward(self, x):
        out = super().forward(x)
        seen.append(out.dtype)
        return out

class Cut(nn.Module):
    def forward(self, x):
        return x.detach()

class Huge(nn.Module):
    def forward(self, x):
        raise MemoryError

def probes():
    return [Probe(6, 6), Probe(6, 6)]

def cut():
    return [nn.Linear(6, 6), Cut()]

def huge():
    return [nn.Linear(6, 6), Huge()]
"""

BASE = ["profile", "--p", "2", "--m", "2", "--repeats", "1", "--comm", "0", "--input-shape", "6",
        "--module"]


@pytest.fixture
def probe_layers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "probe_layers.py").write_text(MODULE)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delitem(sys.modules, "probe_layers", raising=False)


@pytest.mark.usefixtures("probe_layers")
def test_layers_run_in_float32_unless_autocast_is_asked_for(capsys: pytest.CaptureFixture[str]) -> None:
    """Without --autocast the Linear layers compute in float32, as steps without autocast do; with
    --autocast bfloat16 in bfloat16 (an inverted switch ran CPU autocast's bfloat16 by default)."""
    for extra, dtype in (([], "torch.float32"), (["--autocast", "bfloat16"], "torch.bfloat16")):
        assert main([*BASE, "probe_layers:probes", *extra]) == 0
        seen = sys.modules["probe_layers"].seen
        assert seen and {str(d) for d in seen} == {dtype}
        seen.clear()
    capsys.readouterr()


@pytest.mark.usefixtures("probe_layers")
def test_a_modules_failures_in_schedcs_checks_and_in_memory_are_not_the_models(
        capsys: pytest.CaptureFixture[str]) -> None:
    """A detached output is schedc's own check (its line as is, not "the model fails on the example
    microbatch (ProblemError: ...)"); a MemoryError is the out-of-memory line that says which sizes
    to make smaller."""
    assert main([*BASE, "probe_layers:cut"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("schedc: error: the model's output does not require grad") and err.count("\n") == 1
    assert main([*BASE, "probe_layers:huge"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("schedc: error: out of memory building or timing the model (MemoryError)")
    assert err.count("\n") == 1


def test_a_files_own_w_mem_is_kept_over_the_measured_share(tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    """w_mem = 3/4 in the --problem file is the user's (not the ½ every file carries by default):
    kept, with the note that the runner holds more (a share of 1 here: the demo's W holds all that F
    left), as a --w-mem flag is; it was replaced by the measured share."""
    source, out = tmp_path / "in.toml", tmp_path / "out.toml"
    source.write_text("p = 2\nm = 4\nw_mem = 0.75\n")
    argv = ["profile", "--problem", str(source), "--layers", "2", "--width", "8", "--microbatch", "4",
            "--repeats", "1", "--comm", "0", "-o", str(out)]
    assert main(argv) == 0
    assert Fraction(tomllib.loads(out.read_text())["w_mem"]) == Fraction(3, 4)
    assert "measured, the runner still holds a w_mem share of 1 after I, more than the 3/4 given" in (
        capsys.readouterr().err)
    source.write_text("p = 2\nm = 4\n")
    assert main(argv) == 0
    assert Fraction(tomllib.loads(out.read_text())["w_mem"]) == 1  # no w_mem given: the measured one
