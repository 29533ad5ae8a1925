"""runner.eval: the plan's forwards only (validation, inference), as torch's schedule.eval. The
last stage's output for the whole batch and each microbatch's loss equal the unpipelined model's,
no gradient or graph is made, and training steps before and after are unchanged; step's
``losses=`` list gets the same per-microbatch losses, as torch's step fills it."""

from __future__ import annotations

import pytest

from schedc.problem import Problem

torch = pytest.importorskip("torch")

from torch import nn  # noqa: E402
from torch.nn import functional  # noqa: E402

from tests.runtime_cases import WIDTH, batch, reference_grads, run_baseline_cases  # noqa: E402

CASES = {
    "1f1b": ("1f1b", Problem(p=2, m=4, split=False)),
    "zb-v": ("zb-v", Problem(p=2, m=4, v=2, placement="vshape")),
    "interleaved-1f1b": ("interleaved-1f1b", Problem(p=2, m=4, v=2, split=False)),
}


def _expected(num_stages: int, m: int) -> tuple[torch.Tensor, list[float]]:
    from schedc.runtime.models import mlp

    model = nn.Sequential(*mlp(num_stages, WIDTH))
    x, y = batch(m)
    with torch.no_grad():
        out = model(x)
    return out, [float(functional.mse_loss(o, t)) for o, t in zip(out.chunk(m), y.chunk(m), strict=True)]


def _worker(rank: int, _world: int, plans: dict) -> dict:
    from schedc.runtime import PipelineRunner, split_stages
    from schedc.runtime.models import mlp, mlp_loss

    out = {}
    for case, plan in plans.items():
        problem = plan.problem
        layers = mlp(problem.num_stages, WIDTH)
        stages = split_stages(layers, problem, rank)
        mine = {id(p) for s in stages.values() for p in s.parameters()}
        named = {f"{i}.{n}": p for i, layer in enumerate(layers) for n, p in layer.named_parameters()
                 if id(p) in mine}
        runner = PipelineRunner(plan, stages, mlp_loss, timeout=60)
        x, y = batch(problem.m)
        losses: list = []
        first = runner.eval(x, target=y, losses=losses)  # before any step: shapes are learned here
        no_grads = all(p.grad is None for p in named.values())
        step_losses: list = []
        runner.step(x, target=y, losses=step_losses)  # torch's step fills such a list too
        again = runner.eval(x)  # after a step, and without a target: the output only
        out[case] = {"output": None if first is None else first.tolist(), "no_grads": no_grads,
                     "losses": [float(v) for v in losses], "last": runner.holds_last,
                     "step_losses": [float(v) for v in step_losses],
                     "requires_grad": None if first is None else first.requires_grad,
                     "grads": {k: p.grad.tolist() for k, p in named.items()},
                     "again": None if again is None else again.tolist()}
    return out


@pytest.fixture(scope="module")
def results() -> list[dict]:
    return run_baseline_cases(_worker, CASES)


@pytest.mark.parametrize("case", CASES)
def test_eval_gives_the_unpipelined_output_and_losses(results, case):
    problem = CASES[case][1]
    want, want_losses = _expected(problem.num_stages, problem.m)
    holders = [r[case] for r in results if r[case]["last"]]
    assert len(holders) == 1
    got = holders[0]
    torch.testing.assert_close(torch.tensor(got["output"]), want)
    torch.testing.assert_close(torch.tensor(got["again"]), want)
    assert got["losses"] == pytest.approx(want_losses, rel=1e-6)
    assert got["step_losses"] == pytest.approx(want_losses, rel=1e-6)  # the same weights, with a graph
    assert got["requires_grad"] is False
    for r in results:
        if not r[case]["last"]:
            assert r[case]["output"] is None and r[case]["losses"] == r[case]["step_losses"] == []


@pytest.mark.parametrize("case", CASES)
def test_eval_leaves_no_gradient_and_training_is_unchanged(results, case):
    from schedc.runtime.models import mlp

    problem = CASES[case][1]
    layers = mlp(problem.num_stages, WIDTH)
    names = [f"{i}.{n}" for i, layer in enumerate(layers) for n, _ in layer.named_parameters()]
    want = dict(zip(names, reference_grads(layers, *batch(problem.m), problem.m), strict=True))
    got = {key: grad for r in results for key, grad in r[case]["grads"].items()}
    assert set(got) == set(want)
    for key, grad in got.items():
        torch.testing.assert_close(torch.tensor(grad), want[key], msg=f"{case} {key}")
    assert all(r[case]["no_grads"] for r in results)  # eval made no gradient


class Pair(nn.Module):
    """A last layer with a tuple output."""

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return x, 2 * x


def test_eval_on_one_rank_runs_without_a_process_group_and_keeps_tuple_outputs():
    from schedc.baselines import baseline_plan
    from schedc.runtime import PipelineRunner, split_stages
    from schedc.runtime.models import mlp

    problem = Problem(p=1, m=2, v=2)
    layers = [*mlp(2, WIDTH), Pair()]
    plan = baseline_plan("interleaved-1f1b", problem)
    runner = PipelineRunner(plan, split_stages(layers, problem, 0),
                            lambda out, y: functional.mse_loss(out[0], y))
    x, y = batch(2)
    losses: list = []
    first, double = runner.eval(x, target=y, losses=losses)
    with torch.no_grad():
        want = nn.Sequential(*layers[:-1])(x)
    torch.testing.assert_close(first, want)
    torch.testing.assert_close(double, 2 * want)
    assert len(losses) == 2


def test_outputs_and_losses_come_in_microbatch_order_whatever_order_the_plan_runs():
    """A plan may run its microbatches in any order (here the last first): eval's output rows and
    both calls' losses still follow the batch, as the unpipelined model's do."""
    from schedc.actions import Action
    from schedc.plan import Plan
    from schedc.runtime import PipelineRunner, split_stages
    from schedc.runtime.models import mlp, mlp_loss

    problem = Problem(p=1, m=3, split=False)
    orders = (tuple(Action(kind, 0, i) for i in (2, 1, 0) for kind in "FB"),)
    plan = Plan(problem=problem, orders=orders, source="last microbatch first")
    runner = PipelineRunner(plan, split_stages(mlp(1, WIDTH), problem, 0), mlp_loss)
    want, want_losses = _expected(problem.num_stages, problem.m)
    x, y = batch(problem.m)
    losses: list = []
    torch.testing.assert_close(runner.eval(x, target=y, losses=losses), want)
    step_losses: list = []
    runner.step(x, target=y, losses=step_losses)
    assert [float(v) for v in losses] == pytest.approx(want_losses, rel=1e-6)
    assert [float(v) for v in step_losses] == pytest.approx(want_losses, rel=1e-6)


def test_eval_checks_the_batch_as_step_does():
    from schedc.baselines import baseline_plan
    from schedc.runtime import PipelineRunner, PlanMismatchError, split_stages
    from schedc.runtime.models import mlp, mlp_loss

    problem = Problem(p=1, m=2)
    runner = PipelineRunner(baseline_plan("1f1b", problem), split_stages(mlp(2, WIDTH), problem, 0), mlp_loss)
    with pytest.raises(PlanMismatchError, match="does not split into the plan's m = 2"):
        runner.eval(torch.zeros(3, WIDTH))
    with pytest.raises(PlanMismatchError, match="holds the first stage: step\\(\\) needs the input"):
        runner.eval()


class Tagged(nn.Module):
    """A last layer whose output a loss_fn unpacks: a dict of a batch tensor and a 0-d term."""

    def forward(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        return {"logits": x, "aux": x.square().mean()}


def test_eval_merges_dicts_and_lists_0d_terms_per_microbatch():
    from schedc.baselines import baseline_plan
    from schedc.runtime import PipelineRunner, split_stages
    from schedc.runtime.models import mlp

    problem = Problem(p=1, m=2)
    layers = [*mlp(2, WIDTH), Tagged()]
    runner = PipelineRunner(baseline_plan("1f1b", problem), split_stages(layers, problem, 0),
                            lambda out, y: functional.mse_loss(out["logits"], y) + out["aux"])
    x, _ = batch(2)
    out = runner.eval(x)
    with torch.no_grad():
        want = nn.Sequential(*layers[:-1])(x)
    torch.testing.assert_close(out["logits"], want)
    assert len(out["aux"]) == 2  # one per microbatch: a 0-d tensor has no batch dimension to join
    torch.testing.assert_close(out["aux"][1], want.chunk(2)[1].square().mean())


class Trimmed(nn.Module):
    """A last layer whose output width depends on the microbatch (as a sequence trimmed to its
    longest sample would): the outputs cannot be joined along the batch."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x[:, : 1 + int(x.detach().abs().sum() * 1000) % x.shape[1]]


def test_eval_lists_outputs_whose_other_dimensions_differ_by_microbatch():
    from schedc.baselines import baseline_plan
    from schedc.runtime import PipelineRunner, split_stages
    from schedc.runtime.models import mlp

    problem = Problem(p=1, m=2)
    layers = [*mlp(2, WIDTH), Trimmed()]
    runner = PipelineRunner(baseline_plan("1f1b", problem), split_stages(layers, problem, 0),
                            lambda out, y: out.square().mean())
    x, _ = batch(2)
    out = runner.eval(x)
    with torch.no_grad():
        want = [layers[-1](h) for h in nn.Sequential(*layers[:-1])(x).chunk(2)]
    assert want[0].shape[1] != want[1].shape[1]  # the case under test
    assert isinstance(out, list) and len(out) == 2
    for got, expected in zip(out, want, strict=True):
        torch.testing.assert_close(got, expected)


def test_a_losses_argument_that_is_not_a_list_is_one_line_and_leaves_the_runner_usable():
    from schedc.baselines import baseline_plan
    from schedc.errors import ArgumentError
    from schedc.runtime import PipelineRunner, split_stages
    from schedc.runtime.models import mlp, mlp_loss

    problem = Problem(p=1, m=2)
    runner = PipelineRunner(baseline_plan("1f1b", problem), split_stages(mlp(2, WIDTH), problem, 0), mlp_loss)
    x, y = batch(2)
    for call in (runner.step, runner.eval):
        with pytest.raises(ArgumentError, match=r"^rank 0: losses must be a list .* got tuple"):
            call(x, target=y, losses=())
    assert runner.step(x, target=y) is not None  # nothing had started: the runner still trains


def test_a_runner_without_loss_fn_evaluates_and_refuses_to_train_in_one_line():
    from schedc.baselines import baseline_plan
    from schedc.runtime import PipelineRunner, PlanMismatchError, split_stages
    from schedc.runtime.models import mlp

    problem = Problem(p=1, m=2)
    layers = mlp(2, WIDTH)
    runner = PipelineRunner(baseline_plan("1f1b", problem), split_stages(layers, problem, 0))
    x, y = batch(2)
    out = runner.eval(x, target=y)  # no loss to compute: the output only (losses=: test_runtime_eval_losses)
    with torch.no_grad():
        torch.testing.assert_close(out, nn.Sequential(*layers)(x))
    with pytest.raises(PlanMismatchError, match=r"step\(\) needs a loss_fn .*\(it runs eval\(\) only\)"):
        runner.step(x, target=y)
    assert runner.aborted is None  # refused before anything ran


def _lossless_last_rank(rank: int, _world: int, eval_first: bool) -> list[str]:
    """Rank 1 holds the last stage and has no loss_fn; rank 0 has one. Each step's error, by rank."""
    from schedc.baselines import baseline_plan
    from schedc.runtime import PeerTimeoutError, PipelineRunner, PlanMismatchError, split_stages
    from schedc.runtime.models import mlp, mlp_loss

    problem = Problem(p=2, m=2, split=False)
    stages = split_stages(mlp(2, WIDTH), problem, rank)
    runner = PipelineRunner(baseline_plan("1f1b", problem), stages, mlp_loss if rank == 0 else None,
                            timeout=30)
    x, y = batch(2)
    if eval_first:
        runner.eval(x)
    said = []
    for _ in range(2):  # the refusal leaves the runner usable for eval, and refuses again
        try:
            runner.step(x, target=y)
        except (PlanMismatchError, PeerTimeoutError) as err:
            said.append(f"{type(err).__name__}: {err}")
    runner.eval(x)
    return said


@pytest.mark.parametrize("eval_first", [False, True])
def test_every_rank_refuses_step_when_the_last_stage_has_no_loss_fn(eval_first):
    """The ranks learn it in the first call's plan check, so no rank waits for a timeout."""
    from schedc.runtime.launch import run_local

    said = run_local(_lossless_last_rank, 2, eval_first)
    needs = "step() needs a loss_fn on the rank holding the last stage; "
    assert said[1] == [f"PlanMismatchError: rank 1: {needs}this runner was built without one (it runs eval() "
                       "only)"] * 2
    assert said[0] == [f"PlanMismatchError: rank 0: {needs}rank 1's runner was built without one (it runs "
                       "eval() only)"] * 2


def test_eval_losses_hold_one_number_each_not_the_loss_buffer():
    """eval's losses were views of mse_loss's 0-d result, which on CPU shares its whole elementwise
    buffer: m buffers of the batch's size kept for as long as the caller keeps the list (step's
    losses were clones already)."""
    from schedc.baselines import baseline_plan
    from schedc.runtime import PipelineRunner

    runner = PipelineRunner(baseline_plan("1f1b", Problem(p=1, m=4)), {0: nn.Linear(64, 64)},
                            functional.mse_loss)
    x, y = torch.randn(256, 64), torch.randn(256, 64)
    for call in (runner.step, runner.eval):
        losses: list = []
        call(x, target=y, losses=losses)
        assert [t.untyped_storage().nbytes() for t in losses] == [4] * 4, call.__name__
