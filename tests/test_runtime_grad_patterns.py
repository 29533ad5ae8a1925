"""Module patterns whose gradients the runtime once got wrong, or might: each is compared with the
unpipelined model's (``runtime_cases.reference_grads``), mostly on one-rank plans, which run without
a process group."""

from __future__ import annotations

import copy

import pytest
import torch
from torch import nn
from torch.nn import functional

from schedc.baselines import baseline_plan
from schedc.plan import Plan
from schedc.problem import Problem
from schedc.runtime import PipelineRunner, split_stages
from schedc.runtime.launch import run_local
from schedc.runtime.models import mlp, mlp_loss
from schedc.runtime.split_backward import backward_full, backward_input, backward_weight
from tests.runtime_cases import WIDTH as W
from tests.runtime_cases import batch, grads_of, reference_grads


class AddP(nn.Module):
    """x + p with p of the microbatch's shape: autograd hands p's gradient on as x's too."""

    def __init__(self, shape: tuple[int, ...]) -> None:
        super().__init__()
        self.p = nn.Parameter(torch.randn(shape))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.p


@pytest.mark.parametrize("orders", [
    None,  # looped-bfs, p=1 v=2
    [["0F0", "0F1", "1F0", "1F1", "1I0", "1I1", "1W0", "1W1", "0I0", "0I1", "0W0", "0W1"]],
])
def test_a_parameter_added_to_the_activation_gets_the_unpipelined_gradient(orders):
    torch.manual_seed(0)
    problem = Problem(p=1, m=2, v=2)
    layers = [nn.Linear(W, W), AddP((4, W)), nn.Linear(W, W)]
    x, y = batch()
    ref = reference_grads(layers, x, y, problem.m)
    plan = baseline_plan("looped-bfs", problem) if orders is None else \
        Plan(problem=problem, orders=orders, source="custom")
    PipelineRunner(plan, split_stages(layers, problem, 0, bounds=[(0, 1), (1, 3)]), mlp_loss).step(x, y)
    for got, want in zip(grads_of(layers), ref, strict=True):
        torch.testing.assert_close(got, want)


def test_a_layer_unfrozen_after_the_runner_is_built_trains():
    problem = Problem(p=1, m=2)
    layers = mlp(2, W)
    x, y = batch()
    ref = reference_grads(layers, x, y, problem.m)
    for p in layers[0].parameters():
        p.requires_grad_(False)
    runner = PipelineRunner(baseline_plan("zb-h1", problem), split_stages(layers, problem, 0), mlp_loss)
    for p in layers[0].parameters():
        p.requires_grad_(True)
    runner.step(x, y)
    for got, want in zip(grads_of(layers), ref, strict=True):
        torch.testing.assert_close(got, want)



# ---- split backward: graph shapes where W from the joins alone was wrong --------------------------


def _split_against_whole(hook: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """p's gradient through I then W, and through one whole backward, for x * p with (hook=False)
    a second output made from p alone, or (hook=True) a gradient-reversal hook on x * p."""
    torch.manual_seed(0)
    x, p = torch.randn(4, 3), torch.randn(3, requires_grad=True)
    g1, g2 = torch.randn(4, 3), torch.randn(4, 3)
    results = []
    for split in (True, False):
        p.grad = None
        xx = x.clone().requires_grad_()
        h = xx * p
        if hook:
            h.register_hook(lambda g: -g)
        outs, grads = ((h,), (g1,)) if hook else ((h, p.expand(4, 3) * 1.0), (g1, g2))
        if split:
            backward_weight(backward_input(outs, grads, [xx], [p])[1])
        else:
            backward_full(outs, grads, [xx])
        results.append(p.grad.clone())
    return results[0], results[1]


@pytest.mark.parametrize("hook", [False, True])
def test_input_then_weight_gradient_equals_the_whole_backward(hook):
    """A side output made from a parameter alone (a position bias passed on) was missed by W, and a
    hook on the tensor where a parameter joins the input's path ran twice."""
    split, whole = _split_against_whole(hook)
    torch.testing.assert_close(split, whole)


class Reversed(nn.Module):
    """A layer whose output gradient is reversed by a tensor hook (gradient reversal)."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(W, W)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.lin(x)
        if h.requires_grad:
            h.register_hook(lambda g: -g)
        return torch.tanh(h)


class TempLoss(nn.Module):
    """A loss with a learned temperature: a trainable leaf outside every stage's module."""

    def __init__(self) -> None:
        super().__init__()
        self.t = nn.Parameter(torch.tensor(0.7))

    def forward(self, out: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        return functional.mse_loss(out * self.t, target)


PLANS = [("looped-bfs", True), ("interleaved-zb", True), ("looped-bfs", False)]


@pytest.mark.parametrize("name, split", PLANS)
def test_hooks_and_a_loss_with_its_own_parameter_get_the_unpipelined_gradients(name, split):
    torch.manual_seed(3)
    layers, loss = [nn.Sequential(nn.Linear(W, W), nn.Tanh()), Reversed()], TempLoss()
    ref_layers, ref_loss = copy.deepcopy(layers), copy.deepcopy(loss)
    x, y = batch()
    for xs, ys in zip(x.chunk(2), y.chunk(2), strict=True):
        (ref_loss(nn.Sequential(*ref_layers)(xs), ys) / 2).backward()
    problem = Problem(p=1, m=2, v=2, split=split)
    PipelineRunner(baseline_plan(name, problem), split_stages(layers, problem, 0), loss).step(x, y)
    pipelined, unpipelined = [*grads_of(layers), loss.t.grad], [*grads_of(ref_layers), ref_loss.t.grad]
    for got, want in zip(pipelined, unpipelined, strict=True):
        torch.testing.assert_close(got, want)


class ToIndex(nn.Module):
    """Ends a stage with integers (an argmax): the boundary after it carries no gradient."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(W, W)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.lin(x).argmax(-1, keepdim=True).repeat(1, 3)


class FromIndex(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.emb = nn.Embedding(W, W)

    def forward(self, i: torch.Tensor) -> torch.Tensor:
        return self.emb(i).mean(1)


def _integer_boundary(rank: int, world: int) -> list:
    torch.manual_seed(0)
    layers = [nn.Linear(W, W), ToIndex(), FromIndex(), nn.Linear(W, W)]
    reference = copy.deepcopy(layers)
    x, y = batch()
    for xs, ys in zip(x.chunk(2), y.chunk(2), strict=True):
        (mlp_loss(nn.Sequential(*reference)(xs), ys) / 2).backward()
    plan = baseline_plan("zb-h1", Problem(p=2, m=2))  # stage 0: layers 0-1, stage 1: layers 2-3
    PipelineRunner(plan, split_stages(layers, plan.problem, rank), mlp_loss, timeout=30).step(x, y)
    mine = [2, 3] if rank else [0, 1]
    return [(a.grad is None and b.grad is None) or torch.equal(a.grad, b.grad)
            for k in mine for a, b in zip(layers[k].parameters(), reference[k].parameters(), strict=True)]


def test_a_boundary_of_integers_only_crosses_ranks_with_an_empty_gradient_message():
    assert run_local(_integer_boundary, 2, timeout=120) == [[True] * 4, [True] * 3]


class Scale(torch.autograd.Function):
    """A custom Function that keeps state named ``variable`` on its ctx: not a leaf."""

    @staticmethod
    def forward(ctx, x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        ctx.variable = "some state"
        ctx.save_for_backward(x, w)
        return x * w

    @staticmethod
    def backward(ctx, grad: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x, w = ctx.saved_tensors
        return grad * w, (grad * x).sum(0)


class Scaled(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.randn(W))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return Scale.apply(x, self.w)


def test_a_custom_function_with_a_ctx_variable_is_no_leaf():
    torch.manual_seed(0)
    layers = [nn.Linear(W, W), Scaled()]
    x, y = batch()
    ref = reference_grads(layers, x, y, 2)
    problem = Problem(p=1, m=2, v=2)
    stages = split_stages(layers, problem, 0)
    PipelineRunner(baseline_plan("looped-bfs", problem), stages, mlp_loss).step(x, y)
    for got, want in zip(grads_of(layers), ref, strict=True):
        torch.testing.assert_close(got, want)



class ToComplex(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.randn(W, W, dtype=torch.cfloat))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.to(torch.cfloat) @ self.w


class FromComplex(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(W, W)

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        h = self.lin(z.real * z.imag)
        h.retain_grad()  # needs autograd on in the first step's shape-finding forward too
        return h


@pytest.mark.parametrize("name, split", [("interleaved-zb", True), ("interleaved-1f1b", False)])
def test_a_complex_boundary_carries_its_gradient_and_stages_may_retaingrads_of(name, split):
    """A complex activation between two stages of one rank was treated as an integer one (no
    gradient upstream); a stage calling retain_grad failed in the no-grad shape-finding forward."""
    torch.manual_seed(0)
    layers = [ToComplex(), FromComplex()]
    x, y = batch()
    ref = reference_grads(layers, x, y, 2)
    problem = Problem(p=1, m=2, v=2, split=split)
    PipelineRunner(baseline_plan(name, problem), split_stages(layers, problem, 0), mlp_loss).step(x, y)
    for got, want in zip(grads_of(layers), ref, strict=True):
        torch.testing.assert_close(got, want)


@pytest.mark.parametrize("name", ["interleaved-1f1b", "interleaved-zb"])
def test_an_in_place_op_on_the_model_s_own_input_trains_as_unpipelined(name):
    """The microbatches were views of one batch, sharing its version counter: a ReLU(inplace=True)
    at the model's start on microbatch 1 failed microbatch 0's backward with autograd's "modified by
    an inplace operation". Later microbatches are copies once one is seen modified, in later steps
    all of them."""
    problem = Problem(p=1, m=2, v=2, split=name == "interleaved-zb")
    torch.manual_seed(0)
    layers = [nn.ReLU(inplace=True), nn.Linear(4, 4), nn.Tanh(), nn.Linear(4, 4)]
    reference = [nn.ReLU(), *(copy.deepcopy(layer) for layer in layers[1:])]
    runner = PipelineRunner(baseline_plan(name, problem), split_stages(layers, problem, 0), mlp_loss)
    for _ in range(2):
        x, y = torch.randn(4, 4), torch.randn(4, 4)
        halves = [mlp_loss(nn.Sequential(*reference)(xs), ys) / 2
                  for xs, ys in zip(x.split(2), y.split(2), strict=True)]
        for module in (*layers, *reference):
            module.zero_grad()
        loss = runner.step(x, y)
        sum(halves).backward()
        assert torch.allclose(loss, sum(halves).detach())
        for mine, theirs in zip(layers[1:], reference[1:], strict=True):
            for a, b in zip(mine.parameters(), theirs.parameters(), strict=True):
                torch.testing.assert_close(a.grad, b.grad)
