"""Runtime pieces that need no second process: the split backward, the one-rank runner, the stage
helpers, the fit checks and the shape messages."""

from __future__ import annotations

import dataclasses

import pytest
import torch
from torch import nn

from schedc.baselines import applicable, baseline_plan
from schedc.errors import SchedcError
from schedc.problem import Problem
from schedc.runtime import GradDisabledError, PipelineRunner, PlanMismatchError, split_stages, stage_bounds
from schedc.runtime.models import mlp, mlp_loss, transformer, transformer_loss
from schedc.runtime.shape_probe import output_metas
from schedc.runtime.shapes import TensorMeta, decode_metas, encode_metas
from schedc.runtime.split_backward import (
    WeightWork,
    _graph,
    _groups,
    _input_path,
    _node,
    backward_full,
    backward_input,
    backward_weight,
)
from schedc.runtime.stages import fit_errors


class Tied(nn.Module):
    """One Linear used twice: its weight joins the input's path at two nodes."""

    def __init__(self) -> None:
        super().__init__()
        self.lin, self.norm = nn.Linear(6, 6), nn.LayerNorm(6)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.lin(torch.relu(self.lin(self.norm(x))))


class PosGain(nn.Module):
    """The gain enters the input's path twice and the Linear's W pass runs through the gain's join,
    so one group's pass must not free nodes another group still needs."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(6, 6)
        self.pos, self.gain = nn.Parameter(torch.randn(6)), nn.Parameter(torch.ones(6))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.lin((x + self.pos) * self.gain) + self.pos * self.gain


STAGES = {
    "pos-gain": PosGain,
    "mlp": lambda: nn.Sequential(nn.Linear(6, 6), nn.ReLU(), nn.Linear(6, 6)),
    "tied": Tied,
    "no-params": lambda: nn.Tanh(),
    "frozen": lambda: nn.Sequential(nn.Linear(6, 6).requires_grad_(False), nn.Linear(6, 6)),
    "gelu-norm": lambda: nn.Sequential(nn.Linear(6, 6), nn.GELU(), nn.LayerNorm(6), nn.Linear(6, 6)),
    "encoder-layer": lambda: nn.TransformerEncoderLayer(6, 2, dim_feedforward=12, dropout=0.0),
}


def _reference(module, x, g):
    params = [p for p in module.parameters() if p.requires_grad]
    xi = x.clone().requires_grad_()
    return torch.autograd.grad(module(xi), [xi, *params], g)


@pytest.mark.parametrize("name", sorted(STAGES))
def test_input_then_weight_gradients_equal_one_backward(name):
    torch.manual_seed(0)
    module, x, g = STAGES[name](), torch.randn(4, 6), torch.randn(4, 6)
    dx_ref, *dw_ref = _reference(module, x, g)
    params = [p for p in module.parameters() if p.requires_grad]
    xi = x.clone().requires_grad_()
    (dx,), work = backward_input([module(xi)], [g], [xi], params)
    assert all(p.grad is None for p in params)  # I leaves the weights alone
    torch.testing.assert_close(dx, dx_ref)
    backward_weight(work)
    for p, want in zip(params, dw_ref, strict=True):
        torch.testing.assert_close(p.grad, want)
    for p in params:
        p.grad = None
    xi = x.clone().requires_grad_()
    torch.testing.assert_close(backward_full([module(xi)], [g], [xi]), (dx_ref,))
    for p, want in zip(params, dw_ref, strict=True):
        torch.testing.assert_close(p.grad, want)


def test_weight_groups_join_the_input_path_once_per_layer():
    torch.manual_seed(0)
    mod = STAGES["mlp"]()
    x = torch.randn(2, 6, requires_grad=True)
    out = mod(x)
    users = _graph([_node(out)])[0]
    groups = _groups([out], _input_path([x], users), list(mod.parameters()), users)
    assert sorted(len(g.params) for g in groups) == [2, 2]  # (weight, bias) of each Linear
    tied = Tied()
    out = tied(x)
    users = _graph([_node(out)])[0]
    groups = _groups([out], _input_path([x], users), list(tied.parameters()), users)
    assert sorted((len(g.params), len(g.joins)) for g in groups) == [(2, 1), (2, 2)]


def test_a_first_stage_without_differentiable_input_defers_all_to_w():
    torch.manual_seed(0)
    emb = nn.Embedding(10, 4)
    ids = torch.tensor([[1, 2], [3, 4]])
    out = emb(ids)
    dx, work = backward_input([out], [torch.ones_like(out)], [], list(emb.parameters()))
    assert dx == () and emb.weight.grad is None
    backward_weight(work)
    assert emb.weight.grad[1].sum() == 4 and emb.weight.grad[0].sum() == 0


def test_a_stage_without_weights_keeps_nothing_for_w():
    """Its I is the whole backward: holding its outputs and their gradients until W freed nothing."""
    x = torch.randn(4, 8, requires_grad=True)
    out = torch.relu(x)
    dx, work = backward_input([out], [torch.ones_like(out)], [x], [])
    assert torch.equal(dx[0], (x > 0).float())
    assert work == WeightWork()


def _full_batch_grads(layers, loss_fn, x, y):
    model = nn.Sequential(*layers)
    loss = loss_fn(model(x), y)
    loss.backward()
    grads = [p.grad.clone() for p in model.parameters()]
    model.zero_grad(set_to_none=True)
    return loss.detach(), grads


CASES = [(name, problem) for problem in (Problem(p=1, m=4), Problem(p=1, m=2, v=2, placement="vshape"),
                                         Problem(p=1, m=4, v=3))
         for split in (True, False) for name in applicable(dataclasses.replace(problem, split=split))
         for problem in [dataclasses.replace(problem, split=split)]]


@pytest.mark.parametrize(("name", "problem"), CASES, ids=lambda c: c if isinstance(c, str) else c.describe())
def test_one_rank_runner_matches_the_full_batch(name, problem):
    """One rank needs no process group: stage boundaries pass locally."""
    layers = mlp(problem.num_stages, 6)
    torch.manual_seed(1)
    x, y = torch.randn(8, 6), torch.randn(8, 6)
    loss, grads = _full_batch_grads(layers, mlp_loss, x, y)
    runner = PipelineRunner(baseline_plan(name, problem), split_stages(layers, problem, 0), mlp_loss)
    torch.testing.assert_close(runner.step(x, target=y), loss)
    for p, want in zip(nn.Sequential(*layers).parameters(), grads, strict=True):
        torch.testing.assert_close(p.grad, want)


@pytest.mark.parametrize(("name", "problem"), CASES, ids=lambda c: c if isinstance(c, str) else c.describe())
def test_post_accumulate_grad_hooks_run_once_per_microbatch(name, problem):
    """As a per-microbatch ``loss.backward()`` runs them: optimizer-in-backward and gradient
    bucketing hang off these hooks. Split W passes once skipped them (gradients added in Python)."""
    layers = mlp(problem.num_stages, 6)
    calls: dict[int, int] = {}
    for param in nn.Sequential(*layers).parameters():
        calls[id(param)] = 0
        param.register_post_accumulate_grad_hook(lambda t: calls.__setitem__(id(t), calls[id(t)] + 1))
    runner = PipelineRunner(baseline_plan(name, problem), split_stages(layers, problem, 0), mlp_loss)
    runner.step(torch.randn(8, 6), target=torch.randn(8, 6))
    assert set(calls.values()) == {problem.m}


def test_one_rank_transformer_with_token_input_and_split_backward():
    problem = Problem(p=1, m=2, v=2, placement="vshape")
    layers = transformer(blocks=2, width=8, heads=2, seq=4, vocab=11)
    torch.manual_seed(2)
    x, y = torch.randint(0, 11, (4, 4)), torch.randint(0, 11, (4, 4))
    loss, grads = _full_batch_grads(layers, transformer_loss, x, y)
    stages = split_stages(layers, problem, 0)
    runner = PipelineRunner(baseline_plan("zb-v", problem), stages, transformer_loss)
    torch.testing.assert_close(runner.step(x, target=y), loss)
    for p, want in zip(nn.Sequential(*layers).parameters(), grads, strict=True):
        torch.testing.assert_close(p.grad, want)


def test_stage_cuts_are_contiguous_and_even():
    assert stage_bounds(7, 3) == [(0, 3), (3, 5), (5, 7)]
    problem = Problem(p=2, m=1, v=2, placement="vshape")
    layers = [nn.Linear(2, 2) for _ in range(4)]
    stages = split_stages(layers, problem, 0)
    assert sorted(stages) == [0, 3] and stages[3][0] is layers[3]
    with pytest.raises(PlanMismatchError, match="cannot cut 3 layers into 4 stages"):
        split_stages(layers[:3], problem, 0)


def test_fit_errors_name_what_does_not_fit():
    problem = Problem(p=2, m=2, v=2)
    mods = {0: nn.Linear(2, 2), 2: nn.Linear(2, 2)}
    assert fit_errors(problem, mods, 0, 2) == []
    assert "process group has 3" in fit_errors(problem, mods, 0, 3)[0]
    assert "the plan puts stages [1, 3] on it" in fit_errors(problem, mods, 1, 2)[0]
    last = {1: nn.Linear(2, 2), 3: nn.Linear(2, 2)}
    assert fit_errors(problem, last, 1, 2) == []  # no loss_fn needed to build: eval() runs without one
    assert "not nn.Modules" in fit_errors(problem, {0: "x", 2: nn.Linear(2, 2)}, 0, 2)[0]


def test_runner_rejects_a_plan_that_does_not_fit_before_any_communication():
    problem = Problem(p=1, m=2, v=2)
    plan = baseline_plan("interleaved-1f1b", problem)
    with pytest.raises(PlanMismatchError, match=r"rank 0: the plan puts stages \[0, 1\] on it"):
        PipelineRunner(plan, {0: nn.Linear(2, 2)}, mlp_loss)
    two = baseline_plan("1f1b", Problem(p=2, m=2))
    with pytest.raises(PlanMismatchError, match=r"torch\.distributed is not initialised"):
        PipelineRunner(two, {0: nn.Linear(2, 2)}, mlp_loss)


def test_step_rejects_batches_that_do_not_fit():
    problem = Problem(p=1, m=3)
    layers = mlp(1, 4)
    runner = PipelineRunner(baseline_plan("1f1b", problem), split_stages(layers, problem, 0), mlp_loss)
    with pytest.raises(PlanMismatchError, match="does not split into the plan's m = 3"):
        runner.step(torch.randn(4, 4), target=torch.randn(4, 4))
    with pytest.raises(PlanMismatchError, match="needs the target"):
        runner.step(torch.randn(3, 4))
    runner.step(torch.randn(3, 4), target=torch.randn(3, 4))
    with pytest.raises(PlanMismatchError, match="microbatch input changed"):
        runner.step(torch.randn(6, 4), target=torch.randn(6, 4))


def test_step_names_a_wrong_target_a_non_scalar_loss_and_an_in_place_op_at_a_cut():
    problem = Problem(p=1, m=2, v=2)
    plan = baseline_plan("interleaved-1f1b", problem)
    runner = PipelineRunner(plan, split_stages(mlp(2, 4), problem, 0), mlp_loss)
    with pytest.raises(PlanMismatchError, match="target batch of 2 does not match the input batch of 4"):
        runner.step(torch.randn(4, 4), target=torch.randn(2, 4))  # MSE would broadcast it silently
    with pytest.raises(PlanMismatchError, match=r"a list of 2 tensors reads as 2 inputs of stage 0.*pass "
                                                r"the batch itself, which step\(\) cuts into m = 2"):
        runner.step([torch.randn(2, 4), torch.randn(2, 4)], target=torch.randn(4, 4))  # Megatron's habit
    per_row = PipelineRunner(plan, split_stages(mlp(2, 4), problem, 0), lambda out, y: (out - y) ** 2)
    with pytest.raises(PlanMismatchError, match=r"loss_fn must return one number .* got \(2, 4\)"):
        per_row.step(torch.randn(4, 4), target=torch.randn(4, 4))
    in_place = [nn.Linear(4, 4), nn.ReLU(inplace=True), nn.Linear(4, 4)]  # the cut lands before the ReLU
    stages = {0: nn.Sequential(in_place[0]), 1: nn.Sequential(*in_place[1:])}
    with pytest.raises(PlanMismatchError, match=r"^rank 0: stage 1 modifies its input in place"):
        PipelineRunner(plan, stages, mlp_loss).step(torch.randn(4, 4), target=torch.randn(4, 4))



def test_shape_messages_round_trip_and_shape_probes_leave_no_trace():
    meta = TensorMeta((3, 5, 7), torch.bfloat16)
    assert TensorMeta.decode(meta.encode()) == meta
    metas = (meta, TensorMeta((2,), torch.int64))
    assert decode_metas(encode_metas(metas)) == metas
    stage = nn.Sequential(nn.Linear(5, 9), nn.BatchNorm1d(9), nn.Dropout(0.5))
    stats = stage[1].running_mean.clone()
    rng = torch.random.get_rng_state()
    cpu = torch.device("cpu")
    f32 = torch.float32
    assert output_metas(stage, (TensorMeta((2, 5), f32),), cpu) == (TensorMeta((2, 9), f32),)
    assert torch.equal(stage[1].running_mean, stats) and stage.training and stage[2].training
    assert torch.equal(torch.random.get_rng_state(), rng)
    with pytest.raises(PlanMismatchError, match=r"^stage 3 fails on a microbatch input of \(2, 4\) "
                       r"torch.float32 \(RuntimeError: mat1 and mat2 shapes cannot be multiplied") as err:
        output_metas(stage, (TensorMeta((2, 4), f32),), cpu, 3)  # the user's batch is too narrow
    assert isinstance(err.value.__cause__, RuntimeError) and stage.training  # chained; modes restored
    with pytest.raises(PlanMismatchError, match="dims"):
        TensorMeta(tuple(range(1, 11)), torch.float32).encode()


def test_recorded_timeline_follows_the_plan_and_no_grad_is_refused():
    problem = Problem(p=1, m=2, v=2)
    plan = baseline_plan("interleaved-1f1b", problem)
    runner = PipelineRunner(plan, split_stages(mlp(2, 4), problem, 0), mlp_loss, record=True)
    runner.step(torch.randn(4, 4), target=torch.randn(4, 4))
    assert [span.action for span in runner.timeline] == list(plan.orders[0])
    ends = [span.end for span in runner.timeline]
    assert all(0 <= s.start <= s.end and s.waited == 0 for s in runner.timeline) and ends == sorted(ends)
    for context in (torch.no_grad, torch.inference_mode):
        with context(), pytest.raises(GradDisabledError, match=r"outside torch\.no_grad\(\) and") as err:
            runner.step(torch.randn(4, 4), target=torch.randn(4, 4))
        assert isinstance(err.value, SchedcError) and isinstance(err.value, RuntimeError)
    runner.step(torch.randn(4, 4), target=torch.randn(4, 4))  # refused before any state changed


def test_state_is_released_where_the_plan_accounts_it():
    """F keeps the stage's graph; I drops the output side and keeps only what W needs; W drops all."""
    import gc
    import weakref

    from schedc.actions import Action
    from schedc.runtime.comm import Mailbox
    from schedc.runtime.handlers import HANDLERS, StepContext

    problem = Problem(p=1, m=1, v=2)
    stages = split_stages(mlp(2, 4), problem, 0)
    params = {s: list(m.parameters()) for s, m in stages.items()}
    ctx = StepContext(stages=stages, params=params, num_stages=2,
                      mailbox=Mailbox(None, 0, 2, 1.0, torch.device("cpu")),
                      inputs=[torch.randn(2, 4)], targets=[torch.randn(2, 4)], loss_fn=mlp_loss,
                      loss_scale=1.0)
    for kind, stage in (("F", 0), ("F", 1)):
        HANDLERS[kind](ctx, Action(kind, stage, 0))
    out = weakref.ref(ctx.saved[(1, 0)].outputs[0])
    HANDLERS["I"](ctx, Action("I", 1, 0))
    gc.collect()
    assert out() is None and ctx.saved[(1, 0)].weight_work is not None
    assert ctx.mailbox.ready  # the input gradient waits for stage 0's I
    HANDLERS["W"](ctx, Action("W", 1, 0))
    assert (1, 0) not in ctx.saved and all(p.grad is not None for p in params[1])
    assert all(p.grad is None for p in params[0])


def test_an_action_kind_without_handler_fails_loudly(monkeypatch):
    from schedc.runtime import handlers

    monkeypatch.delitem(handlers.HANDLERS, "W")
    problem = Problem(p=1, m=1)
    runner = PipelineRunner(baseline_plan("1f1b", problem), split_stages(mlp(1, 4), problem, 0), mlp_loss)
    with pytest.raises(PlanMismatchError, match="no handler for action kind 'W' \\(action 0W0\\)"):
        runner.step(torch.randn(2, 4), target=torch.randn(2, 4))


def test_first_stage_input_needs_no_gradient():
    """Stage 0's input gradient would go nowhere: its float inputs stay plain tensors (I then does no
    work and W the whole weight backward), while later stages' float inputs need a gradient."""
    from schedc.runtime.handlers import stage_input

    x, tokens = torch.randn(2, 3, requires_grad=True), torch.zeros(2, dtype=torch.long)
    assert not stage_input(x, first=True).requires_grad and stage_input(x, first=False).requires_grad
    assert not stage_input(tokens, first=False).requires_grad
    layer = nn.Linear(3, 3)
    out = layer(stage_input(x, first=True))
    dxs, work = backward_input([out], [torch.ones_like(out)], (), list(layer.parameters()))
    assert dxs == () and layer.weight.grad is None
    backward_weight(work)
    assert torch.allclose(layer.weight.grad, torch.ones(3, 1) @ x.detach().sum(0, keepdim=True))


def test_grads_are_ready_after_the_last_backward_of_every_stage_reaching_them():
    """grads_ready hands each leaf over once, with its final gradient: here stage 0 uses stage 1's
    weight without registering it, the loss has a parameter of its own, and in the hand-written
    plan stage 1's W runs last."""
    from torch.nn import functional

    from schedc.actions import parse_cell
    from schedc.plan import Plan

    class UsesOther(nn.Module):
        def __init__(self, other: nn.Linear) -> None:
            super().__init__()
            self.lin = nn.Linear(4, 4)
            self.__dict__["other"] = other  # used, not registered

        def forward(self, h: torch.Tensor) -> torch.Tensor:
            return torch.tanh(self.lin(h) + h @ self.other.weight.T)

    scale = nn.Parameter(torch.ones(()))
    problem = Problem(p=1, m=2, v=2)
    tokens = ("0F0", "1F0", "1I0", "0I0", "0W0", "0F1", "1F1", "1I1", "0I1", "0W1", "1W0", "1W1")
    hand = Plan(problem=problem, orders={0: [parse_cell(t)[0] for t in tokens]}, source="hand")
    for plan in (hand, baseline_plan("interleaved-zb", problem)):
        torch.manual_seed(0)
        last = nn.Linear(4, 4)
        layers = [UsesOther(last), last]
        scale.grad = None
        handed = []

        def hand_over(params, handed=handed):
            handed.extend((p, p.grad.clone()) for p in params)

        runner = PipelineRunner(plan, split_stages(layers, problem, 0),
                                lambda out, y: functional.mse_loss(out * scale, y), grads_ready=hand_over)
        runner.step(torch.randn(8, 4), target=torch.randn(8, 4))
        leaves = [*nn.Sequential(*layers).parameters(), scale]
        assert sorted(id(p) for p, _ in handed) == sorted(id(p) for p in leaves), plan.source
        for param, grad in handed:
            assert torch.equal(grad, param.grad), plan.source  # nothing added after the hand-over
    with pytest.raises(SchedcError, match=r"^grads_ready must be callable as grads_ready\(params\), .* "
                                          r"got int 3$"):
        PipelineRunner(plan, split_stages(mlp(2, 4), problem, 0), mlp_loss, grads_ready=3)
