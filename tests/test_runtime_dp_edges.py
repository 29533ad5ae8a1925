"""Data-parallel averaging (``dp_group=``) where DDP-style bucketing goes wrong silently unless
guarded: two replicas, each a one-rank pipeline, on two gloo processes. Each case's gradients must
equal the average of the replicas' unpipelined gradients, step after step; replicas that hold
different trainable parameters, or a replica that fails, give one-line errors instead."""

from __future__ import annotations

import time

import pytest

torch = pytest.importorskip("torch")

from torch import nn  # noqa: E402
from torch.nn import functional  # noqa: E402
from torch.utils.checkpoint import checkpoint  # noqa: E402

W, M = 4, 4


class Twice(nn.Module):
    """One Linear applied twice, each call under a reentrant checkpoint: its own nested backward
    accumulates into the weight twice within the stage's last backward."""

    def __init__(self, reentrant: bool = True) -> None:
        super().__init__()
        self.pre, self.lin, self.reentrant = nn.Linear(W, W), nn.Linear(W, W), reentrant

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = checkpoint(self.lin, self.pre(x), use_reentrant=self.reentrant)
        return checkpoint(self.lin, torch.tanh(h), use_reentrant=self.reentrant)


class LateLoss(nn.Module):
    """A loss with its own parameter, used only on microbatches whose target has a positive mean."""

    def __init__(self) -> None:
        super().__init__()
        self.t = nn.Parameter(torch.tensor(2.0))

    def forward(self, out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        loss = functional.mse_loss(out, y)
        return loss * self.t if y.mean() > 0 else loss


class Borrow(nn.Module):
    """A stage that also uses the next stage's weight, on inputs of positive mean only."""

    def __init__(self, other: nn.Linear) -> None:
        super().__init__()
        self.lin = nn.Linear(W, W)
        object.__setattr__(self, "other", other)  # not registered: another stage's weight

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.lin(x)
        return h @ self.other.weight if x.mean() > 0 else h


class PickLoss(nn.Module):
    """A loss with two scalars of one shape: ``a`` scales targets of positive mean, ``b`` others."""

    def __init__(self) -> None:
        super().__init__()
        self.a, self.b = nn.Parameter(torch.tensor(2.0)), nn.Parameter(torch.tensor(3.0))

    def forward(self, out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return functional.mse_loss(out, y) * (self.a if y.mean() > 0 else self.b)


class Lookup(nn.Module):
    """Rows of a table picked by the input: through a sparse nn.Embedding, or through the functional
    lookup with sparse gradients on a plain weight (which no module check can see)."""

    def __init__(self, module: bool) -> None:
        super().__init__()
        if module:
            self.emb = nn.Embedding(5, W, sparse=True)
        else:
            self.weight = nn.Parameter(torch.randn(5, W))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rows = (x.abs() * 3).long() % 5
        if hasattr(self, "emb"):
            return self.emb(rows).mean(1)
        return functional.embedding(rows, self.weight, sparse=True).mean(1)


class ClosureLoss:
    """A loss function (no module) with two scalar leaves of one shape, picked by the target's sign:
    nothing names them, so replicas could only be matched by the order they reach them."""

    def __init__(self) -> None:
        self.u, self.v = torch.tensor(2.0, requires_grad=True), torch.tensor(3.0, requires_grad=True)

    def __call__(self, out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return functional.mse_loss(out, y) * (self.u if y.mean() > 0 else self.v)


def _build(case: str, reference: bool = False) -> tuple[list[nn.Module], object, int]:
    """(layers, loss, stages per rank) of a case, seeded alike in every process."""
    torch.manual_seed(0)
    if case == "reentrant checkpoint, shared weight":
        return [Twice(reentrant=not reference)], functional.mse_loss, 1
    if case == "loss parameter used late":
        return [nn.Linear(W, W)], LateLoss(), 1
    if case in ("replicas use different loss parameters of one shape",
                "replicas reach loss parameters in other orders"):
        return [nn.Linear(W, W)], PickLoss(), 1
    if case == "two unregistered leaves of one shape":
        return [nn.Linear(W, W)], ClosureLoss(), 1
    if case == "a lazy parameter":
        return [nn.LazyLinear(W), nn.Linear(W, W)], functional.mse_loss, 1
    if case == "replicas built with other weights":  # one weight stored transposed: not contiguous
        layers = [nn.Linear(W, W), nn.Linear(W, W)]
        layers[1].weight = nn.Parameter(layers[1].weight.detach().t().contiguous().t())
        assert not layers[1].weight.is_contiguous()
        return layers, functional.mse_loss, 1
    if case.startswith("sparse gradients"):
        return [Lookup(module=case.endswith("nn.Embedding")), nn.Linear(W, W)], functional.mse_loss, 1
    if case == "other stage's weight used late":
        second = nn.Linear(W, W)
        return [Borrow(second), second], functional.mse_loss, 2
    return [nn.Linear(W, W), nn.Linear(W, W)], functional.mse_loss, 1


def _data(case: str, replica: int, step: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Microbatch 0 avoids the late branches; replica 1 also microbatch 1, so the replicas differ
    (the loss-picking case: every target of replica 1 negative, of replica 0 positive)."""
    gen = torch.Generator().manual_seed(10 * step + replica)
    x, y = torch.randn(2 * M, W, generator=gen).abs(), torch.randn(2 * M, W, generator=gen).abs()
    if case == "replicas use different loss parameters of one shape":
        return x, y if replica == 0 else -y
    if case == "replicas reach loss parameters in other orders":  # each reaches a and b, in turn
        first = slice(0, M) if replica == 0 else slice(M, 2 * M)
        y[first] = -y[first]
        return x, y
    late = slice(0, 4 if replica else 2)
    x[late], y[late] = -x[late], -y[late]
    return x, y


def _named(layers: list[nn.Module], loss_fn: object) -> dict[str, torch.Tensor]:
    modules = [*layers, *([loss_fn] if isinstance(loss_fn, nn.Module) else [])]
    found: dict[int, tuple[str, torch.Tensor]] = {}
    for i, module in enumerate(modules):
        for name, p in module.named_parameters():
            found.setdefault(id(p), (f"{i}.{name}", p))
    return dict(found.values())


def _worker(rank: int, world: int, cases: list[str]) -> dict:
    import torch.distributed as dist

    from schedc.baselines import baseline_plan
    from schedc.problem import Problem
    from schedc.runtime import PipelineRunner, split_stages

    pipelines, dp = [dist.new_group([r]) for r in range(world)], dist.new_group(list(range(world)))
    out = {}
    for case in cases:
        layers, loss_fn, v = _build(case)
        if case == "replicas freeze different parameters":
            layers[rank].bias.requires_grad_(False)
        if case == "replicas freeze different layers of one shape":  # the same shapes in the same order
            layers[rank].requires_grad_(False)
        plan = baseline_plan("1f1b" if v == 1 else "interleaved-1f1b", Problem(p=1, m=M, v=v, split=False))
        if case == "a replica fails":
            loss_fn = _failing(rank)
        if case == "replicas built with other weights" and rank == 1:  # DDP broadcasts replica 0's
            with torch.no_grad():
                for p in _named(layers, loss_fn).values():
                    p.add_(1.0)
        steps = []
        timeout = 2 if case == "a replica fails" else 30  # 2 s only where tested: load skews replicas
        try:
            runner = PipelineRunner(plan, split_stages(layers, plan.problem, 0), loss_fn, pipelines[rank],
                                    dp_group=dp, bucket_bytes=16, timeout=timeout)
            for step in range(2):  # the second step's hooks launch inside the backward
                for p in _named(layers, loss_fn).values():
                    p.grad = None
                x, y = _data(case, rank, step)
                if case == "replicas take unequal shares" and rank == 1:
                    x, y = torch.cat([x, x]), torch.cat([y, y])
                runner.step(x, y)
                steps.append({k: None if p.grad is None else p.grad.tolist()
                              for k, p in _named(layers, loss_fn).items()})
        except Exception as err:
            if case == "a replica fails" and rank == 1:
                time.sleep(6)  # alive, as a process that caught its error would be, past the timeout
            out[case] = {"error": f"{type(err).__name__}: {err}"}
            continue
        out[case] = {"steps": steps, "launched": runner._dp.launched}
    return out


def _failing(rank: int):
    calls = [0]

    def loss_fn(out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        calls[0] += 1
        if rank == 1 and calls[0] == M:
            raise RuntimeError("replica 1 fails on its last microbatch")
        return functional.mse_loss(out, y)
    return loss_fn


def _reference(case: str, step: int) -> dict[str, torch.Tensor]:
    """The replicas' unpipelined gradients, averaged."""
    total: dict[str, torch.Tensor] = {}
    for replica in range(2):
        layers, loss_fn, _ = _build(case, reference=True)
        model = nn.Sequential(*layers)
        x, y = _data(case, replica, step)
        for xs, ys in zip(x.chunk(M), y.chunk(M), strict=True):
            (loss_fn(model(xs), ys) / M).backward()
        for key, p in _named(layers, loss_fn).items():
            total[key] = total.get(key, 0) + (torch.zeros_like(p) if p.grad is None else p.grad) / 2
    return total


GRADIENT_CASES = ["reentrant checkpoint, shared weight", "loss parameter used late",
                  "other stage's weight used late", "replicas reach loss parameters in other orders",
                  "replicas built with other weights"]
ERROR_CASES = ["replicas freeze different parameters", "replicas freeze different layers of one shape",
               "replicas use different loss parameters of one shape", "sparse gradients from an nn.Embedding",
               "sparse gradients from a functional lookup", "two unregistered leaves of one shape",
               "replicas take unequal shares", "a lazy parameter", "a replica fails"]  # last: its peer sleeps


@pytest.fixture(scope="module")
def results() -> list[dict]:
    from schedc.runtime.launch import run_local

    return run_local(_worker, 2, GRADIENT_CASES + ERROR_CASES, timeout=240)


@pytest.mark.parametrize("case", GRADIENT_CASES)
def test_averages_equal_the_replicas_unpipelined_gradients(results, case):
    for per_rank in results:
        got = per_rank[case]
        assert "error" not in got, got
        for step, grads in enumerate(got["steps"]):
            want = _reference(case, step)
            for key, grad in grads.items():
                torch.testing.assert_close(torch.tensor(grad), want[key], msg=f"{case} step {step} {key}")


@pytest.mark.parametrize("case", ["replicas freeze different parameters",
                                  "replicas freeze different layers of one shape"])
def test_replicas_that_freeze_different_parameters_fail_in_one_line(results, case):
    for per_rank in results:
        error = per_rank[case].get("error", "")
        assert "hold different trainable parameters (which are frozen" in error and "\n" not in error


def test_a_replica_that_fails_ends_its_peers_step_within_the_timeout(results):
    """The failed replica stays alive past the timeout, so only the runner's timeout ends the wait
    (its peer leaving would be a PeerError about a closed connection instead)."""
    error = results[0]["a replica fails"]["error"]
    assert error.startswith("PeerTimeoutError: rank 0 waited for the data-parallel"), error
    assert "within 2 s" in error and "\n" not in error


def test_replicas_that_reach_different_loss_parameters_of_one_shape_fail_in_one_line(results):
    """The leaves outside the stages are compared by name where they have one (a loss module's)."""
    for per_rank in results:
        error = per_rank["replicas use different loss parameters of one shape"].get("error", "")
        assert "hold different leaves outside their stage modules" in error and "\n" not in error


@pytest.mark.parametrize("case, message", [
    ("two unregistered leaves of one shape", "rank 0: two leaves outside the stage modules, both of shape () "
                                             "and torch.float32, got gradients, and dp_group cannot tell"),
    ("replicas take unequal shares", "the data-parallel replicas were given microbatches of other shapes "
                                     "(with variable_shapes, of other sizes), are at other steps"),
    ("a lazy parameter", "rank 0: dp_group needs every parameter initialised when the runner is built, but "
                         "stage 0's 0.weight is lazy"),
    ("sparse gradients from an nn.Embedding", "rank 0: dp_group averages dense gradients only, but stage "
                                              "0's 0.emb makes sparse ones: build it with sparse=False"),
    ("sparse gradients from a functional lookup", "rank 0: parameters of shapes [(5, 4)] got sparse "
                                                  "gradients, but dp_group averages dense ones only"),
])
def test_sparse_gradients_are_one_line(results, case, message):
    """Buckets flatten dense gradients (DDP all-gathers sparse ones apart): refused when the runner is
    built where a module shows them, else before the bucket goes out, alike on every replica (each
    the only rank of its pipeline: rank 0, which on the second replica is global rank 1)."""
    for replica, per_rank in enumerate(results):
        error = per_rank[case].get("error", "")
        want = message.replace("rank 0:", "rank 0 (global rank 1):") if replica else message
        assert want in error and "\n" not in error, error


def _pipeline_as_dp(rank: int, _world: int) -> str:
    import torch.distributed as dist

    from schedc.baselines import baseline_plan
    from schedc.errors import SchedcError
    from schedc.problem import Problem
    from schedc.runtime import PipelineRunner, split_stages
    from schedc.runtime.models import mlp, mlp_loss

    plan = baseline_plan("1f1b", Problem(p=2, m=2))
    try:
        PipelineRunner(plan, split_stages(mlp(2, 4), plan.problem, rank), mlp_loss, timeout=30,
                       dp_group=dist.new_group([0, 1]))
    except SchedcError as err:
        return str(err)
    return "built"


def test_the_pipeline_s_own_group_as_dp_group_is_named():
    """It said "replicas hold different parameters" (its two 'replicas' hold different stages)."""
    from schedc.runtime.launch import run_local

    for rank, message in enumerate(run_local(_pipeline_as_dp, 2, timeout=120)):
        assert message == (f"rank {rank}: dp_group holds global ranks [{1 - rank}] of this rank's own "
                           "pipeline; give it the ranks holding the same stages in the other pipelines")
