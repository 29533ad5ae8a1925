"""The README's training example under torchrun itself: the launcher's env:// rendezvous, one process
per rank, and a loss that goes down. The runtime's other tests spawn their ranks with
``schedc.runtime.launch``; this one checks the path a user takes."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "train_pipeline.py"


def _torchrun(*args: str) -> subprocess.CompletedProcess:
    launcher = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2"]
    command = [*launcher, str(EXAMPLE), *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=240)


def test_the_example_trains_under_torchrun():
    pytest.importorskip("torch")
    done = _torchrun("--schedule", "zb-v", "--steps", "12")
    assert done.returncode == 0, done.stderr[-2000:]
    losses = [float(x) for x in re.findall(r"^step +\d+ +loss ([0-9.]+) +\(rank 0\)$", done.stdout, re.M)]
    assert len(losses) == 12
    assert sum(losses[-3:]) < sum(losses[:3])  # it learns: a wrong gradient would not lower it steadily
