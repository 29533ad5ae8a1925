"""Backwards the split cannot run, or that reach past their stage: each is one line that names
the stage and the way out, where torch's own message speaks of calls the user never made."""

from __future__ import annotations

import dataclasses

import pytest
import torch
from torch import nn

from schedc.baselines import baseline_plan
from schedc.problem import Problem
from schedc.runtime import PipelineRunner, PlanMismatchError
from schedc.runtime.models import mlp_loss
from tests.test_runtime_split import _full_batch_grads


class Reentrant(nn.Module):
    """A Linear under ``checkpoint(use_reentrant=True)``, which refuses a backward over part of the
    graph."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.utils.checkpoint.checkpoint(self.lin, x, use_reentrant=True)


def test_reentrant_checkpoint_is_named_in_split_plans_and_trains_unsplit():
    """Stage 0 is a plain Linear: a reentrant checkpoint whose inputs need no gradient makes an
    output that needs none (torch warns)."""
    torch.manual_seed(3)
    x, y = torch.randn(4, 4), torch.randn(4, 4)
    split = Problem(p=1, m=2, v=2)
    stages = {0: nn.Linear(4, 4), 1: Reentrant()}
    runner = PipelineRunner(baseline_plan("interleaved-zb", split), stages, mlp_loss)
    refused = (r"^rank 0: stage 1 uses checkpoint\(use_reentrant=True\), which cannot split .* "
               r"or a plan without split")
    with pytest.raises(PlanMismatchError, match=refused):
        runner.step(x, target=y)
    for module in stages.values():
        module.zero_grad(set_to_none=True)
    unsplit = dataclasses.replace(split, split=False)
    loss, grads = _full_batch_grads([stages[0], stages[1]], mlp_loss, x, y)
    runner = PipelineRunner(baseline_plan("interleaved-1f1b", unsplit), stages, mlp_loss)
    torch.testing.assert_close(runner.step(x, target=y), loss)
    for p, want in zip(nn.Sequential(stages[0], stages[1]).parameters(), grads, strict=True):
        torch.testing.assert_close(p.grad, want)


class AuxLoss(nn.Module):
    """Keeps an auxiliary loss aside in its forward for the loss function to add (as some MoE code
    does): the last stage's backward then reaches into this stage's graph. ``nested`` keeps it two
    levels deep, where the shape probe's entry (a meta tensor) is not put back."""

    def __init__(self, nested: bool = False) -> None:
        super().__init__()
        self.lin, self.store = nn.Linear(4, 4), {"aux": []} if nested else []

    @property
    def aux(self) -> list:
        return self.store["aux"] if isinstance(self.store, dict) else self.store

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.tanh(self.lin(x))
        self.aux.append((h * h).mean())
        return torch.sigmoid(h)


@pytest.mark.parametrize("nested", [False, True])
@pytest.mark.parametrize("name", ["interleaved-zb", "interleaved-1f1b"])
def test_a_loss_reaching_another_stages_graph_is_named(name, nested):
    """Split, it gave wrong gradients silently before I freed the input side; unsplit, torch's
    "backward through the graph a second time". The shape probe's own entry is put back one level
    deep; deeper, the first microbatch's loss takes it: also one line."""
    problem = Problem(p=1, m=2, v=2, split=name == "interleaved-zb")
    aux = AuxLoss(nested)
    stages = {0: aux, 1: nn.Linear(4, 4)}
    plan = baseline_plan(name, problem)
    runner = PipelineRunner(plan, stages, lambda out, y: mlp_loss(out, y) + aux.aux.pop(0))
    said = r"the loss holds a tensor of the shape probe \(meta device\)" if nested else \
        r"reached, in its backward, a .* freed"
    with pytest.raises(PlanMismatchError, match=said + ": a loss or forward that uses the activations of "):
        runner.step(torch.randn(4, 4), target=torch.randn(4, 4))


def test_a_stage_compiled_with_donated_buffers_is_named():
    """torch.compile donates buffers to a backward compiled by an ordinary backward, which then
    refuses to keep its graph from I to W."""
    stage = nn.Sequential(nn.Linear(4, 4), nn.LayerNorm(4), nn.Linear(4, 4))
    stage = torch.compile(stage, backend="aot_eager")
    stage(torch.randn(4, 4, requires_grad=True)).sum().backward()  # a warm-up step without schedc
    problem = Problem(p=1, m=2, v=2)
    plan = baseline_plan("interleaved-zb", problem)
    runner = PipelineRunner(plan, {0: nn.Linear(4, 4), 1: stage}, mlp_loss)
    with pytest.raises(PlanMismatchError, match=r"^rank 0: stage 1 was compiled with donated buffers .*"
                                                r"donated_buffer = False, or a plan without split"):
        runner.step(torch.randn(4, 4), target=torch.randn(4, 4))


class Selective(nn.Module):
    """A selective activation checkpoint (torchtitan's default kind): its cache of saved results
    allows one backward over the region, where W runs a second."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        import functools

        from torch.utils.checkpoint import CheckpointPolicy, checkpoint, create_selective_checkpoint_contexts

        def policy(ctx, op, *args, **kwargs):
            return CheckpointPolicy.MUST_SAVE if op == torch.ops.aten.addmm.default else \
                CheckpointPolicy.PREFER_RECOMPUTE

        contexts = functools.partial(create_selective_checkpoint_contexts, policy)
        return checkpoint(lambda t: torch.tanh(self.lin(t)), x, use_reentrant=False, context_fn=contexts)


def test_selective_checkpoint_is_named_in_split_plans_and_trains_unsplit():
    """torch said "Trying to backward an extra time", a call the user never made."""
    torch.manual_seed(4)
    x, y = torch.randn(4, 4), torch.randn(4, 4)
    split = Problem(p=1, m=2, v=2)
    stages = {0: nn.Linear(4, 4), 1: Selective()}
    runner = PipelineRunner(baseline_plan("interleaved-zb", split), stages, mlp_loss)
    with pytest.raises(PlanMismatchError, match=r"^rank 0: stage 1 uses selective activation checkpointing "):
        runner.step(x, target=y)
    for module in stages.values():
        module.zero_grad(set_to_none=True)
    loss, grads = _full_batch_grads([stages[0], stages[1]], mlp_loss, x, y)
    unsplit = dataclasses.replace(split, split=False)
    runner = PipelineRunner(baseline_plan("interleaved-1f1b", unsplit), stages, mlp_loss)
    torch.testing.assert_close(runner.step(x, target=y), loss)
    for p, want in zip(nn.Sequential(stages[0], stages[1]).parameters(), grads, strict=True):
        torch.testing.assert_close(p.grad, want)


def test_an_inference_tensor_handed_on_within_a_rank_is_an_input_like_any_other():
    """A side output made under inference_mode crossed to a next stage on the same rank as the
    tensor itself: requires_grad_ on it failed ("inference tensor outside InferenceMode"), where a
    message to another rank arrives as an ordinary copy."""
    from schedc.runtime.handlers import stage_input

    with torch.inference_mode():
        made = torch.ones(3)
    given = stage_input(made, first=False)
    assert given.requires_grad and not given.is_inference()
