# sed -i '201s/comm_given="comm" in given/comm_given="comm" not in given/' schedc/cli_profile.py
# sed -i '59s/flags.model != "mlp"/flags.model == "mlp"/' schedc/profile_model.py
# sed -i '62s/torch.randn(b, flags.width))/torch.randn(1, flags.width))/' schedc/profile_model.py
"""The demo models profile runs: the latency line of its summary, its loss target, and the advice
when a demo model is too large."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from schedc.cli import main


def test_the_summary_says_the_latency_was_given_only_when_comm_was(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--comm 0 is the user's latency, which the summary marks; one rank measures none (0 us) and
    says nothing of --comm."""
    base = ["profile", "--m", "2", "--layers", "2", "--width", "8", "--repeats", "1",
            "-o", str(tmp_path / "p.toml")]
    assert main([*base, "--p", "2", "--comm", "0"]) == 0
    assert "P2P latency (one way): 0 us (given by --comm)\n" in capsys.readouterr().out
    assert main([*base, "--p", "1"]) == 0
    out = capsys.readouterr().out
    assert "P2P latency (one way): 0 us\n" in out and "--comm" not in out


def test_the_mlp_demos_loss_target_has_the_outputs_shape(tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """The MSE target is a microbatch of the output's shape: a (1, width) target was broadcast,
    with torch's warning that the sizes differ, and a loss no training step computes."""
    argv = ["profile", "--p", "2", "--m", "2", "--layers", "2", "--width", "8", "--microbatch", "4",
            "--repeats", "1", "--comm", "0", "-o", str(tmp_path / "p.toml")]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert main(argv) == 0
    assert not [w for w in caught if "target size" in str(w.message)]
    capsys.readouterr()


def test_the_advice_for_a_demo_too_large_names_only_its_own_flags(capsys: pytest.CaptureFixture[str]) -> None:
    """The MLP has no --vocab or --seq (profile refuses them for it): its advice names --layers and
    --width alone; the transformer's adds --vocab and --seq."""
    base = ["profile", "--p", "2", "--m", "2", "--repeats", "1", "--comm", "0", "--layers", "2"]
    assert main([*base, "--width", "100000000"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.rstrip("\n").endswith("give smaller --layers or --width")
    assert main([*base, "--model", "transformer", "--width", "100000000", "--heads", "1"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "give smaller --layers or --width, --vocab or --seq" in err
