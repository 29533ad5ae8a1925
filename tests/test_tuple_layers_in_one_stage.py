# sed -i '47s/args = out if isinstance(out, tuple) else (out,)/args = (out,)/' runtime/stages.py
# sed -i '90s/for o in outputs if o.requires_grad\]/for o in outputs]/' runtime/split_backward.py
"""Tuples between layers and between stages (runtime/stages.py ``Chain``, runtime/grads_ready.py):
inside one stage a layer's tuple output is unpacked into the next layer's arguments, and a stage
that passes on an integer tensor beside its activation trains with ``grads_ready`` as without."""

from __future__ import annotations

import copy

import torch
from torch import nn

from schedc.baselines import baseline_plan
from schedc.problem import Problem
from schedc.runtime import PipelineRunner, split_stages
from schedc.runtime.models import mlp_loss


class Split(nn.Module):
    """(activation, a 0/1 integer mask of its signs): the mask needs no gradient."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = self.lin(x)
        return h, (h > 0).long()


class Masked(nn.Module):
    """Takes the two tensors as two arguments."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, h: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return self.lin(h * mask)


def _reference(layers: list[nn.Module], x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, list]:
    ref = copy.deepcopy(layers)
    h, mask = ref[0](x)
    loss = mlp_loss(ref[1](h, mask), y)
    loss.backward()
    return loss.detach(), [p.grad for layer in ref for p in layer.parameters()]


def test_a_tuple_between_two_layers_of_one_stage_is_unpacked() -> None:
    """One stage holding both layers: ``Masked`` gets (h, mask) as two arguments, as it does when
    the two sit on different stages; passing the tuple as one argument was a TypeError."""
    torch.manual_seed(0)
    layers, x, y = [Split(), Masked()], torch.randn(4, 4), torch.randn(4, 4)
    loss, grads = _reference(layers, x, y)
    problem = Problem(p=1, m=1)
    runner = PipelineRunner(baseline_plan("1f1b", problem), split_stages(layers, problem, 0), mlp_loss)
    torch.testing.assert_close(runner.step(x, target=y), loss)
    for p, want in zip([p for layer in layers for p in layer.parameters()], grads, strict=True):
        torch.testing.assert_close(p.grad, want)


def test_an_integer_stage_output_with_grads_ready() -> None:
    """Stage 0 passes its mask on as a second output: ``grads_ready`` reads which leaves each
    forward reaches from the outputs that require grad only (the mask has no graph to walk, and
    asking torch for its gradient edge raised)."""
    torch.manual_seed(0)
    layers, x, y = [Split(), Masked()], torch.randn(4, 4), torch.randn(4, 4)
    _, grads = _reference(layers, x[:2], y[:2])
    _, more = _reference(layers, x[2:], y[2:])
    problem = Problem(p=1, m=2, v=2)
    handed: list[torch.Tensor] = []
    runner = PipelineRunner(baseline_plan("interleaved-zb", problem), split_stages(layers, problem, 0),
                            mlp_loss, grads_ready=handed.extend)
    runner.step(x, target=y)
    params = [p for layer in layers for p in layer.parameters()]
    assert sorted(id(p) for p in handed) == sorted(id(p) for p in params)
    for p, a, b in zip(params, grads, more, strict=True):
        torch.testing.assert_close(p.grad, (a + b) / 2)
