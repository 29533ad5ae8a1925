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


def _torchrun(*args: str, ranks: int = 2) -> subprocess.CompletedProcess:
    launcher = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", str(ranks)]
    command = [*launcher, str(EXAMPLE), *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=240)


def test_the_example_trains_under_torchrun():
    pytest.importorskip("torch")
    done = _torchrun("--schedule", "zb-v", "--steps", "12")
    assert done.returncode == 0, done.stderr[-2000:]
    losses = [float(x) for x in re.findall(r"^step +\d+ +loss ([0-9.]+) +\(rank 0\)$", done.stdout, re.M)]
    assert len(losses) == 12
    assert sum(losses[-3:]) < sum(losses[:3])  # it learns: a wrong gradient would not lower it steadily
    held_out = re.findall(r"^held-out loss ([0-9.]+) +\(rank 0\)$", done.stdout, re.M)
    assert len(held_out) == 1  # runner.eval on a fresh batch, after training


def test_the_example_trains_two_pipelines_with_averaged_gradients():
    """Two pipelines of two ranks, gradients clipped by the pipeline's norm: each rank holding the
    last stage prints its half's loss (lines of four processes may run together on one line)."""
    pytest.importorskip("torch")
    done = _torchrun("--data-parallel", "2", "--schedule", "zb-h1", "--steps", "8", "--clip-norm", "1",
                     ranks=4)
    assert done.returncode == 0, done.stderr[-2000:]
    for rank in (1, 3):  # pipeline k holds ranks 2k and 2k + 1; the last stage is on the second
        losses = [float(x) for x in re.findall(rf"step +\d+ +loss ([0-9.]+) +\(rank {rank}\)", done.stdout)]
        assert len(losses) == 8, done.stdout[-2000:]
        assert sum(losses[-2:]) < sum(losses[:2])


@pytest.mark.parametrize("args, message", [
    (["--lr", "-1"], "--lr must be a positive number, got -1.0"),  # was AdamW's traceback on every rank
    (["--clip-norm", "nan"], "--clip-norm must be a positive number, got nan"),
    (["--steps", "-1"], "--steps must be at least 1, got -1"),  # ran no step, silently
    (["--tie-embeddings"], "--tie-embeddings ties the transformer's embedding and head"),  # was ignored
    (["--schedule", "zb-v", "--stages-per-rank", "3"], "--schedule zb-v holds 2 stages per rank"),  # ran v=2
    (["--plan", "p.json", "--no-split"], "--plan gives the schedule and its problem: drop --no-split"),
    (["--solve", "--schedule", "nosuch"], "--schedule nosuch is none of gpipe, 1f1b"),  # solved anyway
    (["--schedule", "interleaved-1f1b", "--stages-per-rank", "1"], "--schedule interleaved-1f1b needs 2 or"),
    (["--microbatches", "0"], "--microbatches must be at least 1, got 0"),
])
def test_flags_the_example_would_ignore_or_fail_on_are_usage_errors(args, message):
    """Checked before any process group: no torchrun needed, nothing trains."""
    pytest.importorskip("torch")
    done = subprocess.run([sys.executable, str(EXAMPLE), *args], capture_output=True, text=True, timeout=120)
    last = done.stderr.splitlines()[-1]
    assert done.returncode == 2 and last.startswith(f"train_pipeline.py: error: {message}"), done.stderr
