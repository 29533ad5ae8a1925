"""Misuse of the runtime that a PyTorch user plausibly commits: each gets one line, or, where it is
legitimate (unfreezing a layer, a parameter added to an activation), the right gradients. One-rank
plans run without a process group, so these need no spawned processes."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch
from torch import nn
from torch.nn import functional

from schedc.baselines import baseline_plan
from schedc.errors import ArgumentError, ProblemError
from schedc.plan import Plan
from schedc.problem import Problem
from schedc.runtime import PipelineRunner, PlanMismatchError, split_stages, stage_bounds
from schedc.runtime.launch import run_local
from schedc.runtime.models import mlp, mlp_loss
from schedc.runtime.profile import measure_p2p, profile_problem, time_stages
from schedc.runtime.shapes import TensorMeta
from schedc.runtime.split_backward import backward_full, backward_input, backward_weight

W = 8
CUT = "stage bounds must cut the 8 layers in order"


class AddP(nn.Module):
    """x + p with p of the microbatch's shape: autograd hands p's gradient on as x's too."""

    def __init__(self, shape: tuple[int, ...]) -> None:
        super().__init__()
        self.p = nn.Parameter(torch.randn(shape))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.p


def _reference(layers: list[nn.Module], x: torch.Tensor, y: torch.Tensor, m: int) -> list[torch.Tensor]:
    """Gradients of the unpipelined model: the mean of the microbatches' mean losses."""
    ref = copy.deepcopy(layers)
    for xs, ys in zip(x.chunk(m), y.chunk(m), strict=True):
        (functional.mse_loss(nn.Sequential(*ref)(xs), ys) / m).backward()
    return [p.grad for layer in ref for p in layer.parameters()]


def _grads(layers: list[nn.Module]) -> list[torch.Tensor | None]:
    return [p.grad for layer in layers for p in layer.parameters()]


def _batch(m: int = 2, rows: int = 4) -> tuple[torch.Tensor, torch.Tensor]:
    torch.manual_seed(1)
    return torch.randn(m * rows, W), torch.randn(m * rows, W)


@pytest.mark.parametrize("orders", [
    None,  # looped-bfs, p=1 v=2
    [["0F0", "0F1", "1F0", "1F1", "1I0", "1I1", "1W0", "1W1", "0I0", "0I1", "0W0", "0W1"]],
])
def test_a_parameter_added_to_the_activation_gets_the_unpipelined_gradient(orders):
    torch.manual_seed(0)
    problem = Problem(p=1, m=2, v=2)
    layers = [nn.Linear(W, W), AddP((4, W)), nn.Linear(W, W)]
    x, y = _batch()
    ref = _reference(layers, x, y, problem.m)
    plan = baseline_plan("looped-bfs", problem) if orders is None else \
        Plan(problem=problem, orders=orders, source="custom")
    PipelineRunner(plan, split_stages(layers, problem, 0, bounds=[(0, 1), (1, 3)]), mlp_loss).step(x, y)
    for got, want in zip(_grads(layers), ref, strict=True):
        torch.testing.assert_close(got, want)


def test_a_layer_unfrozen_after_the_runner_is_built_trains():
    problem = Problem(p=1, m=2)
    layers = mlp(2, W)
    x, y = _batch()
    ref = _reference(layers, x, y, problem.m)
    for p in layers[0].parameters():
        p.requires_grad_(False)
    runner = PipelineRunner(baseline_plan("zb-h1", problem), split_stages(layers, problem, 0), mlp_loss)
    for p in layers[0].parameters():
        p.requires_grad_(True)
    runner.step(x, y)
    for got, want in zip(_grads(layers), ref, strict=True):
        torch.testing.assert_close(got, want)


def _runner(**kwargs) -> PipelineRunner:
    problem = Problem(p=1, m=2)
    stages = split_stages(mlp(2, W), problem, 0)
    return PipelineRunner(baseline_plan("1f1b", problem), stages, mlp_loss, **kwargs)


@pytest.mark.parametrize("kwargs, message", [
    ({"timeout": float("inf")}, "timeout must be a number of seconds in (0, 1e+07] (None: the process"),
    ({"timeout": 0}, "own), got 0"),
    ({"timeout": "5"}, "timeout must be a number of seconds"),
    ({"recv_ahead": -1}, "recv_ahead must be None or an integer >= 0, got -1"),
    ({"ties": (0, "0.weight")}, "ties must be a list of ties, each a list of (stage, parameter name) pairs"),
    ({"ties": [[0, "0.weight"]]}, "tie 0 must be a list of (stage, parameter name) pairs"),
])
def test_bad_runner_arguments_are_one_line(kwargs, message):
    with pytest.raises((ArgumentError, PlanMismatchError)) as err:
        _runner(**kwargs)
    assert message in str(err.value) and "\n" not in str(err.value)


def test_a_problem_in_place_of_a_plan_is_one_line():
    problem = Problem(p=1, m=2)
    with pytest.raises(ArgumentError, match="PipelineRunner needs a Plan"):
        PipelineRunner(problem, split_stages(mlp(2, W), problem, 0), mlp_loss)


@pytest.mark.parametrize("x, target, message", [
    (torch.randn(0, W), torch.randn(0, W), "the input batch of 0 does not split into the plan's m = 2 equal, "
                                           "non-empty microbatches"),
    (torch.tensor(1.0), torch.randn(8, W), "the input is a 0-d tensor"),
    ({"x": torch.randn(8, W)}, torch.randn(8, W), "the input must be a tensor or a tuple of tensors, got"),
    (torch.randn(8, W), {"y": torch.randn(8, W)}, "the target must be a tensor or a tuple of tensors (or"),
    (torch.randn(8, W, requires_grad=True), torch.randn(8, W), "the input requires grad"),
    ((), torch.randn(8, W), "the input is an empty tuple"),
])
def test_batches_without_a_batch_dimension_to_cut_are_one_line(x, target, message):
    with pytest.raises(PlanMismatchError) as err:
        _runner().step(x, target)
    assert message in str(err.value)


def test_a_tuple_target_is_cut_entry_by_entry():
    def weighted(out, target):
        y, w = target
        return (functional.mse_loss(out, y, reduction="none").mean(1) * w).mean()

    problem = Problem(p=1, m=2)
    layers = mlp(2, W)
    runner = PipelineRunner(baseline_plan("1f1b", problem), split_stages(layers, problem, 0), weighted)
    x, y = _batch()
    ref = _reference(layers, x, y, 2)
    loss = runner.step(x, (y, torch.ones(8)))  # weights of 1: the plain mean loss
    with torch.no_grad():
        torch.testing.assert_close(loss, functional.mse_loss(nn.Sequential(*layers)(x), y))
    for got, want in zip(_grads(layers), ref, strict=True):
        torch.testing.assert_close(got, want)
    with pytest.raises(PlanMismatchError, match=r"the target's entries have batches of \[8, 4\]"):
        runner.step(x, (y, torch.ones(4)))


@pytest.mark.parametrize("labels", [tuple(range(8)), list("abcdefgh"), np.arange(8)])
def test_a_target_of_labels_is_cut_as_samples(labels):
    seen = []

    def count(out, target):
        seen.append(list(target))
        return out.mean()

    problem = Problem(p=1, m=2)
    PipelineRunner(baseline_plan("1f1b", problem), split_stages(mlp(2, W), problem, 0), count).step(
        torch.randn(8, W), labels)
    assert seen == [list(labels[:4]), list(labels[4:])]


def test_a_loss_that_does_not_require_grad_is_one_line():
    problem = Problem(p=1, m=2)
    runner = PipelineRunner(baseline_plan("1f1b", problem), split_stages(mlp(2, W), problem, 0),
                            lambda out, y: mlp_loss(out, y).detach())
    with pytest.raises(PlanMismatchError, match="loss_fn returned a loss that does not require grad"):
        runner.step(*_batch())


def test_tied_copies_of_another_shape_on_one_rank_are_one_line():
    problem = Problem(p=1, m=2, v=2)
    stages = split_stages(mlp(2, W), problem, 0)
    tie = [(0, "0.weight"), (1, "0.bias")]
    message = r"tie 0's copies differ in shape or dtype: stage 0 '0.weight' \(8, 8\) torch.float32, stage 1"
    with pytest.raises(PlanMismatchError, match=message):
        PipelineRunner(baseline_plan("looped-bfs", problem), stages, mlp_loss, ties=[tie])


class Whole(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Sequential(*mlp(2, W))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(x)


@pytest.mark.parametrize("call, message", [
    (lambda p: split_stages(mlp(4, W), baseline_plan("1f1b", p), 0), "split_stages needs the plan's Problem"),
    (lambda p: split_stages(Whole(), p, 0), "layers must be an nn.Sequential, an nn.ModuleList or a list of"),
    (lambda p: split_stages(mlp(4, W), p, "0"), "rank '0' is outside the plan's 2 ranks"),
    (lambda p: split_stages(mlp(4, W), p, 0, bounds=[(0, 3), (4, 8)]), CUT),
    (lambda p: split_stages(mlp(4, W), p, 0, bounds=[(0, 5), (3, 8)]), CUT),
    (lambda p: split_stages(mlp(4, W), p, 0, bounds=[(0, 2), (2, 4)]), CUT),
    (lambda p: split_stages(mlp(4, W), p, 0, bounds=[(0, 0), (0, 8)]), CUT),
    (lambda p: split_stages(mlp(4, W), p, 0, bounds=[4, 8]), "a list of (start, end) integer pairs"),
    (lambda p: stage_bounds(4, 0), "stage_bounds needs integer counts of layers and (>= 1) stages"),
])
def test_cutting_a_model_wrongly_is_one_line(call, message):
    with pytest.raises((ArgumentError, PlanMismatchError)) as err:
        call(Problem(p=2, m=2))
    assert message in str(err.value)


def test_given_bounds_that_cover_the_layers_are_kept():
    stages = split_stages(mlp(4, W), Problem(p=2, m=2), 1, bounds=[(0, 3), (3, 8)])
    assert len(stages[1]) == 5


@pytest.mark.parametrize("layers", [nn.ModuleList(mlp(4, W)), nn.Sequential(*mlp(4, W)), iter(mlp(4, W))])
def test_layers_may_be_any_sequence_or_iterable_of_modules_and_indices_numpy_ints(layers):
    stages = split_stages(layers, Problem(p=2, m=2), np.int64(1), bounds=[(0, np.int64(3)), (3, 8)])
    assert list(stages) == [1] and len(stages[1]) == 5


# ---- profiling: arguments that would give a wrong profile or a traceback -------------------------


def _profile_stages(problem: Problem) -> list[nn.Module]:
    return [split_stages(mlp(2, W), problem, r)[r] for r in range(problem.p)]


@pytest.mark.parametrize("kwargs, message", [
    ({"unit": 1.0}, "unit = 1 s is coarser than every stage's forward"),
    ({"unit": 0}, "unit must be a finite number of seconds > 0, got 0"),
    ({"unit": float("nan")}, "unit must be a finite number of seconds > 0, got nan"),
    ({"comm": -1.0}, "comm must be a finite number of seconds >= 0, got -1.0"),
    ({"repeats": 0}, "--repeats must be an integer >= 1, got 0"),
])
def test_profile_arguments_that_would_mislead_are_one_line(kwargs, message):
    problem = Problem(p=2, m=2)
    args = {"comm": 0.0, "repeats": 1, **kwargs}
    with pytest.raises(ProblemError) as err:
        profile_problem(_profile_stages(problem), torch.randn(4, W), problem, loss_fn=mlp_loss,
                        target=torch.randn(4, W), **args)
    assert str(err.value).startswith(message)


def test_profile_takes_a_module_list_and_checks_stages_warmup_and_the_loss():
    problem = Problem(p=2, m=2)
    stages = _profile_stages(problem)
    x, y = torch.randn(4, W), torch.randn(4, W)
    measured = profile_problem(nn.ModuleList(stages), x, problem, loss_fn=mlp_loss, target=y, comm=0.0,
                               repeats=1)
    assert len(measured.problem.stage_costs) == 2
    with pytest.raises(ArgumentError, match=r"stages must be a list of every stage's nn\.Module"):
        time_stages(dict(enumerate(stages)), x, mlp_loss, y, repeats=1)
    with pytest.raises(ProblemError, match="warmup must be an integer >= 0, got -1"):
        time_stages(stages, x, mlp_loss, y, repeats=1, warmup=-1)
    with pytest.raises(ProblemError, match="loss_fn must return a scalar tensor that requires grad"):
        time_stages(stages, x, lambda out, t: functional.mse_loss(out, t, reduction="none"), y, repeats=1)
    with pytest.raises(ProblemError, match="repeats must be an integer >= 1, got 0"):
        measure_p2p(TensorMeta((4, W), torch.float32), repeats=0)


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
            backward_full(outs, grads, [xx], [p])
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
    x, y = _batch()
    for xs, ys in zip(x.chunk(2), y.chunk(2), strict=True):
        (ref_loss(nn.Sequential(*ref_layers)(xs), ys) / 2).backward()
    problem = Problem(p=1, m=2, v=2, split=split)
    PipelineRunner(baseline_plan(name, problem), split_stages(layers, problem, 0), loss).step(x, y)
    for got, want in zip([*_grads(layers), loss.t.grad], [*_grads(ref_layers), ref_loss.t.grad], strict=True):
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
    x, y = _batch()
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
    x, y = _batch()
    ref = _reference(layers, x, y, 2)
    problem = Problem(p=1, m=2, v=2)
    stages = split_stages(layers, problem, 0)
    PipelineRunner(baseline_plan("looped-bfs", problem), stages, mlp_loss).step(x, y)
    for got, want in zip(_grads(layers), ref, strict=True):
        torch.testing.assert_close(got, want)


def test_a_target_that_requires_grad_is_one_line():
    teacher = nn.Linear(W, W)
    x, _ = _batch()
    with pytest.raises(PlanMismatchError, match="the target requires grad, but the runner gives the target"):
        _runner().step(x, teacher(x))


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
def test_a_complex_boundary_carries_its_gradient_and_stages_may_retain_grads(name, split):
    """A complex activation between two stages of one rank was treated as an integer one (no
    gradient upstream); a stage calling retain_grad failed in the no-grad shape-finding forward."""
    torch.manual_seed(0)
    layers = [ToComplex(), FromComplex()]
    x, y = _batch()
    ref = _reference(layers, x, y, 2)
    problem = Problem(p=1, m=2, v=2, split=split)
    PipelineRunner(baseline_plan(name, problem), split_stages(layers, problem, 0), mlp_loss).step(x, y)
    for got, want in zip(_grads(layers), ref, strict=True):
        torch.testing.assert_close(got, want)


def test_the_shape_finding_forward_names_an_in_place_op_on_the_stage_input():
    """It runs with autograd on now, as the real forward does, and says the same thing."""
    from schedc.runtime.shapes import output_metas

    stage = nn.Sequential(nn.ReLU(inplace=True), nn.Linear(W, W))
    with pytest.raises(PlanMismatchError, match=r"^stage 1 modifies its input in place \(e\.g\. ReLU"):
        output_metas(stage, (TensorMeta((2, W), torch.float32),), torch.device("cpu"), 1)
    assert output_metas(stage, (TensorMeta((2, W), torch.float32),), torch.device("cpu"), 0) == (
        TensorMeta((2, W), torch.float32),)  # stage 0's input needs no gradient, as in the real forward
