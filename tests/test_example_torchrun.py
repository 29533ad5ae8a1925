# sed -i '153s/if str(err).startswith(f"rank {rank}:") else/if False else/' examples/train_pipeline.py
# sed -i '199s/BATCH\[args.model\] % args.microbatches/False/' examples/train_pipeline.py
# sed -i '204s/if args.no_split and not args.solve else None/if False else None/' examples/train_pipeline.py
"""The README's training example under torchrun itself: the launcher's env:// rendezvous, one process
per rank, and a loss that goes down. The runtime's other tests start their ranks with
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
    assert "; simulated makespan 24.5" in done.stdout  # as the CLI prints it (49/2 before)
    losses = [float(x) for x in re.findall(r"^step +\d+ +loss ([0-9.]+) +\(rank 0\)$", done.stdout, re.M)]
    assert len(losses) == 12
    assert sum(losses[-3:]) < sum(losses[:3])  # it learns: a wrong gradient would not lower it steadily
    held_out = re.findall(r"^held-out loss ([0-9.]+) +\(rank 0\)$", done.stdout, re.M)
    assert len(held_out) == 1  # runner.eval on a fresh batch, after training


def test_the_example_trains_two_pipelines_with_averaged_gradients():
    """Two pipelines of two ranks under float16 autocast with loss scaling, gradients unscaled and
    clipped by the pipeline's norm: each rank holding the last stage prints its half's loss, each
    line whole (print's text and newline were two writes under torchrun's unbuffered output, and
    lines of two ranks ran together), and the held-out eval runs under the same autocast (without
    it, its float32 activations met the float16 buffers the steps had learned)."""
    pytest.importorskip("torch")
    done = _torchrun("--data-parallel", "2", "--schedule", "zb-h1", "--steps", "8", "--clip-norm", "1",
                     "--precision", "fp16", ranks=4)
    assert done.returncode == 0, done.stderr[-2000:]
    for rank in (1, 3):  # pipeline k holds ranks 2k and 2k + 1; the last stage is on the second
        losses = [float(x) for x in re.findall(rf"^step +\d+ +loss ([0-9.]+) +\(rank {rank}\)$", done.stdout,
                                               re.M)]
        assert len(losses) == 8, done.stdout[-2000:]
        assert sum(losses[-2:]) < sum(losses[:2])
        assert re.search(rf"^held-out loss [0-9.]+ +\(rank {rank}\)$", done.stdout, re.M)


def test_the_transformer_learns_and_ties_its_head_on_one_rank():
    """Its task was to reverse the tokens, which a causal model cannot see (the loss stayed near a
    uniform guess's, ln 32 = 3.47); the tie on one rank, where embedding and head share a stage,
    was refused as a tie of one stage."""
    pytest.importorskip("torch")
    done = _torchrun("--model", "transformer", "--tie-embeddings", "--steps", "12", ranks=1)
    assert done.returncode == 0, done.stderr[-2000:]
    losses = [float(x) for x in re.findall(r"^step +\d+ +loss ([0-9.]+) +\(rank 0\)$", done.stdout, re.M)]
    held_out = [float(x) for x in re.findall(r"^held-out loss ([0-9.]+) +\(rank 0\)$", done.stdout, re.M)]
    assert len(losses) == 12 and losses[-1] < losses[0] - 0.3 and held_out[0] < 3.3, done.stdout


def test_the_transformer_learns_from_batches_of_changing_length_on_two_ranks():
    """Sequences of 8 to 16 tokens, another length each step, on ZB-V (two stages per rank): the
    runner, built with variable_shapes=True, learns each length's shapes in the step's all-reduce."""
    pytest.importorskip("torch")
    done = _torchrun("--model", "transformer", "--variable-lengths", "--schedule", "zb-v", "--steps", "12")
    assert done.returncode == 0, done.stderr[-2000:]
    losses = [float(x) for x in re.findall(r"^step +\d+ +loss ([0-9.]+) +\(rank 0\)$", done.stdout, re.M)]
    held_out = re.findall(r"^held-out loss ([0-9.]+) +\(rank 0\)$", done.stdout, re.M)
    assert len(losses) == 12 and losses[-1] < losses[0] - 0.3 and len(held_out) == 1, done.stdout


def test_a_plan_for_another_rank_count_names_the_ranks_to_run(tmp_path):
    pytest.importorskip("torch")
    from schedc.baselines import baseline_plan
    from schedc.plan_json import save_plan
    from schedc.problem import Problem

    path = tmp_path / "p1.json"
    save_plan(baseline_plan("1f1b", Problem(p=1, m=8)), str(path))
    done = _torchrun("--plan", str(path))
    assert done.returncode != 0
    assert f"error (rank 1): --plan {path} has p = 1, but the 2 ranks make one pipeline: run " \
           "--nproc-per-node 1, or --data-parallel 2" in done.stderr


def test_a_runner_error_names_its_rank_once(tmp_path):
    """The runner's errors begin with their rank: the example's line named it twice ("error (rank 0):
    rank 0: the input batch ..."); an error without it (the plan's p above) keeps the example's."""
    pytest.importorskip("torch")
    from schedc.baselines import baseline_plan
    from schedc.plan_json import save_plan
    from schedc.problem import Problem

    path = tmp_path / "m7.json"
    save_plan(baseline_plan("1f1b", Problem(p=2, m=7)), str(path))
    done = _torchrun("--plan", str(path))
    assert done.returncode != 0
    lines = [line for line in done.stderr.splitlines() if line.startswith("train_pipeline.py: error")]
    assert "train_pipeline.py: error: rank 0: the input batch of 64 does not split into the plan's m = 7" \
           in "\n".join(lines), done.stderr[-2000:]
    assert not any("(rank" in line for line in lines), lines


@pytest.mark.parametrize("args, message", [
    (["--lr", "-1"], "--lr must be a positive number, got -1.0"),  # was AdamW's traceback on every rank
    (["--clip-norm", "nan"], "--clip-norm must be a positive number, got nan"),
    (["--steps", "-1"], "--steps must be at least 1, got -1"),  # ran no step, silently
    (["--tie-embeddings"], "--tie-embeddings ties the transformer's embedding and head"),  # was ignored
    (["--variable-lengths"], "--variable-lengths varies the transformer's sequences"),
    (["--schedule", "zb-v", "--stages-per-rank", "3"], "--schedule zb-v holds 2 stages per rank"),  # ran v=2
    (["--plan", "p.json", "--no-split"], "--plan gives the schedule and its problem: drop --no-split"),
    (["--solve", "--schedule", "nosuch"], "--schedule nosuch is none of gpipe, 1f1b"),  # solved anyway
    (["--schedule", "interleaved-1f1b", "--stages-per-rank", "1"], "--schedule interleaved-1f1b needs 2 or"),
    (["--microbatches", "0"], "--microbatches must be at least 1, got 0"),
    (["--model", "transformer", "--microbatches", "6"],  # was one error per rank, after the solve
     "--microbatches 6 does not divide the transformer's batch of 32 samples"),
    (["--no-split", "--schedule", "zb-h1"], "--no-split: --schedule zb-h1 needs the split backward"),
    (["--data-parallel", "0"], "--data-parallel must be at least 1, got 0"),  # failed in the run
])
def test_flags_the_example_would_ignore_or_fail_on_are_usage_errors(args, message, monkeypatch, capsys):
    """Checked before any process group: no torchrun needed, nothing trains. In this process (the
    example's main as its command line runs it), as a process start costs seconds of imports."""
    pytest.importorskip("torch")
    from tests.benchmark_scripts import load_script

    example = load_script(EXAMPLE)
    monkeypatch.setattr(sys, "argv", [str(EXAMPLE), *args])

    def no_group(*_, **__):  # a flag let through must not leave a process group in this process
        raise AssertionError(f"{args} reached init_process_group")

    monkeypatch.setattr(example.dist, "init_process_group", no_group)
    with pytest.raises(SystemExit) as done:
        example.main()
    err = capsys.readouterr().err
    assert done.value.code == 2, err
    assert err.splitlines()[-1].startswith(f"train_pipeline.py: error: {message}"), err


def test_a_usage_error_from_the_command_line_is_one_line():
    pytest.importorskip("torch")
    done = subprocess.run([sys.executable, str(EXAMPLE), "--lr", "-1"], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 2 and "Traceback" not in done.stderr and done.stdout == ""
    last = done.stderr.splitlines()[-1]
    assert last == "train_pipeline.py: error: --lr must be a positive number, got -1.0"
