"""benchmarks/cuda_check.py (the one-GPU runtime check) runs and passes on CPU, so the script a
GPU session runs has not rotted: its checks compare against the unpipelined model, not constants."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "cuda_check.py"


def test_cuda_check_passes_on_cpu(tmp_path):
    out = tmp_path / "check.json"
    run = subprocess.run([sys.executable, str(SCRIPT), "--device", "cpu", "--steps", "1", "--json", str(out)],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    report = json.loads(out.read_text())
    assert report["env"]["device"] == "cpu"
    assert report["timing"]["steps"] == 1  # what the timing medians are over
    assert len(report["checks"]) == 9 and all(row["ok"] for row in report["checks"])
    assert {row["dtype"] for row in report["checks"] if "dtype" in row} == {"float32", "bfloat16"}
    plans = report["timing"]["plans"]
    assert set(plans) == {"interleaved-1f1b", "interleaved-1f1b unsplit", "solver cap 1"}
    assert all(row["schedc_s"] > 0 and row["simulated_s"] > 0 for row in plans.values())


@pytest.mark.parametrize(("args", "says"), [
    (["--device", "cpu", "--steps", "0"], "argument --steps: must be an integer >= 1, got '0'"),
    (["--device", "bogus"], "argument --device: not a torch device: 'bogus'"),
    pytest.param(["--device", "cuda"], "argument --device: CUDA is not available in this torch build",
                 marks=pytest.mark.skipif(torch.backends.cuda.is_built(), reason="a CUDA build")),
])
def test_bad_options_are_one_argparse_line_before_any_check(args, says, monkeypatch, capsys):
    """The script's main as its command line runs it, in this process (a start costs seconds)."""
    from tests.benchmark_scripts import load_benchmark

    monkeypatch.setattr(sys, "argv", [str(SCRIPT)])  # argparse names the program after it
    with pytest.raises(SystemExit) as done:
        load_benchmark("cuda_check").main(args)
    out, err = capsys.readouterr()
    assert done.value.code == 2 and err.splitlines()[-1].startswith(f"cuda_check.py: error: {says}")
    assert out == ""


def test_a_bad_option_from_the_command_line_is_one_line():
    run = subprocess.run([sys.executable, str(SCRIPT), "--device", "bogus"], capture_output=True, text=True,
                         timeout=60)
    assert run.returncode == 2 and "Traceback" not in run.stderr and run.stdout == ""
    last = run.stderr.splitlines()[-1]
    assert last.startswith("cuda_check.py: error: argument --device: not a torch device")


@pytest.mark.parametrize(("built", "count", "text", "says"), [
    (True, 0, "cuda", "no CUDA device is visible"),  # a CUDA build on a machine without a GPU
    (False, 0, "cuda:0", "CUDA is not available in this torch build"),
    (True, 1, "cuda:3", "'cuda:3': only 1 CUDA device(s) visible"),
])
def test_cuda_devices_that_cannot_run_are_refused_by_name(monkeypatch, built, count, text, says):
    """The branches a CPU build of torch cannot reach from the command line, with torch's answers
    stubbed: what a CUDA build on a machine without a GPU, or with fewer GPUs, would say."""
    import argparse

    from tests.benchmark_scripts import load_benchmark

    script = load_benchmark("cuda_check")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: count > 0)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: count)
    monkeypatch.setattr(torch.backends.cuda, "is_built", lambda: built)
    with pytest.raises(argparse.ArgumentTypeError) as refused:
        script._device(text)
    assert str(refused.value) == says
    assert script._device("cpu") == torch.device("cpu")
