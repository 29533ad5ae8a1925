# sed -i '36s/range(0, size, size \/\/ m)/range(0, size - 1, size \/\/ m)/' runtime/batches.py
# sed -i '86s/first.dim() > 0/first.dim() > 1/' runtime/batches.py
# sed -i '133s/torch.Tensor | list) or/torch.Tensor) or/' runtime/batches.py
"""Cutting a batch into microbatches at the edges: one sample per microbatch, a 1-d input, a
tuple target whose entries are a tensor and a plain list."""

from __future__ import annotations

import pytest
import torch
from torch import nn
from torch.nn import functional

from schedc.baselines import baseline_plan
from schedc.problem import Problem
from schedc.runtime import PipelineRunner, PlanMismatchError, split_stages
from schedc.runtime.models import mlp
from tests.runtime_cases import WIDTH


def test_a_list_target_of_one_sample_per_microbatch_is_cut_into_m() -> None:
    """A list of m labels is m microbatches of one: a range that stopped one short of its end made
    one microbatch of it."""
    seen: list[list[int]] = []

    def count(out: torch.Tensor, target: list[int]) -> torch.Tensor:
        seen.append(list(target))
        return out.mean()

    problem = Problem(p=1, m=2)
    runner = PipelineRunner(baseline_plan("1f1b", problem), split_stages(mlp(2, WIDTH), problem, 0), count)
    runner.step(torch.randn(2, WIDTH), [7, 9])
    assert seen == [[7], [9]]


def test_a_target_of_another_size_beside_a_1d_input_is_one_line() -> None:
    """A 1-d input (a token per sample) has a batch dimension too: skipping the size check there
    let MSE fail (or broadcast) mid-step instead of naming the two sizes."""
    problem = Problem(p=1, m=2)
    layers = [nn.Embedding(10, WIDTH), nn.Linear(WIDTH, WIDTH)]
    runner = PipelineRunner(baseline_plan("1f1b", problem), split_stages(layers, problem, 0),
                            functional.mse_loss)
    with pytest.raises(PlanMismatchError, match=r"^rank 0: the target batch of 12 does not match the input "
                                                r"batch of 8$"):
        runner.step(torch.randint(0, 10, (8,)), torch.randn(12, WIDTH))


def test_a_tuple_target_with_a_list_entry_is_cut_entry_by_entry() -> None:
    """(labels, per-sample weights as a list): each entry has the batch's 8 samples. Read as a
    sequence of 2 samples it was refused as a target batch of 2."""
    weights: list[list[float]] = []

    def weighted(out: torch.Tensor, target: tuple) -> torch.Tensor:
        y, w = target
        weights.append(list(w))
        return (functional.mse_loss(out, y, reduction="none").mean(1) * torch.as_tensor(w)).mean()

    problem = Problem(p=1, m=2)
    runner = PipelineRunner(baseline_plan("1f1b", problem), split_stages(mlp(2, WIDTH), problem, 0), weighted)
    w = [float(k) for k in range(8)]
    runner.step(torch.randn(8, WIDTH), (torch.randn(8, WIDTH), w))
    assert weights == [w[:4], w[4:]]
