"""The first step's shape probe (``runtime/shape_probe.py``) leaves no trace: no buffer, weight,
attribute or random state of a stage changes, and the first step equals the unpipelined model's,
whatever a stage keeps; the probe learns the dtypes and outputs the step will make."""

from __future__ import annotations

import copy
import random

import pytest
import torch
from torch import nn

from schedc.baselines import baseline_plan
from schedc.problem import Problem
from schedc.runtime import PipelineRunner
from schedc.runtime.models import mlp_loss
from schedc.runtime.shape_probe import output_metas
from schedc.runtime.shapes import TensorMeta


class Normaliser(nn.Module):
    """Keeps a running mean of its input in buffers, in every mode (as input normalisers do), and
    with ``branch`` takes a data-dependent path, which the meta device cannot run."""

    def __init__(self, branch: bool = False) -> None:
        super().__init__()
        self.lin, self.branch = nn.Linear(4, 4), branch
        self.register_buffer("count", torch.zeros(()))
        self.register_buffer("mean", torch.zeros(4))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            self.count += 1
            self.mean += (x.mean(0) - self.mean) / self.count
        h = self.lin(x - self.mean)
        return (h * 2 if float(h.detach().sum()) > 0 else h) if self.branch else h


class TrainOnlyAux(nn.Module):
    """Returns an auxiliary term beside its output in training only (as MoE layers do)."""

    def forward(self, x: torch.Tensor) -> object:
        return (x, x.square().mean(1)) if self.training else x


class Cached(nn.Module):
    """Fills a cache in a plain attribute on its first forward (as rotary tables and causal masks
    are): the probe's meta tensor must not stay there for the real forward."""

    def __init__(self) -> None:
        super().__init__()
        self.lin, self.table = nn.Linear(4, 4), None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.table is None:
            self.table = torch.ones(x.shape[1], device=x.device)
        return self.lin(x) * self.table


@pytest.mark.parametrize("bag", [False, True], ids=["embedding", "embedding-bag"])
@pytest.mark.parametrize("branch", [False, True])
def test_the_shape_probe_writes_no_buffer_weight_or_attribute(branch, bag):
    """The probe forward runs on meta copies of the state (or, where the meta device cannot run the
    stage, on clones of the buffers and of a max_norm embedding's weight): an earlier forward on
    real zeros counted itself in such buffers, shifting every later gradient, and renormalised the
    embedding's row 0. Stage 0 is probed (the last stage never is); its cache is filled for real."""
    norm, cached = Normaliser(branch), Cached()
    embed = nn.EmbeddingBag(10, 8, max_norm=1.0, mode="sum") if bag else nn.Embedding(10, 4, max_norm=1.0)
    with torch.no_grad():
        embed.weight.mul_(5)  # every row above max_norm
    row0 = embed.weight[0].clone()
    flat = [] if bag else [nn.Flatten()]  # a bag sums a sample's tokens into one row of 8
    stages = {0: nn.Sequential(embed, *flat, nn.Linear(8, 4), norm, cached), 1: nn.Linear(4, 4)}
    plan = baseline_plan("interleaved-1f1b", Problem(p=1, m=2, v=2))
    x, y = torch.randint(1, 10, (4, 2)), torch.randn(4, 4)  # no token 0
    PipelineRunner(plan, stages, mlp_loss).step(x, target=y)
    assert float(norm.count) == 2  # one per microbatch, none for the probe
    assert torch.equal(embed.weight[0], row0)
    assert cached.table is not None and cached.table.device.type == "cpu"


def test_the_shape_probe_under_autocast_finds_the_steps_dtypes():
    """Meta tensors are not autocast-eligible: the probe runs on zeros there."""
    stage, f32, cpu = nn.Sequential(nn.Linear(4, 4), nn.Tanh()), torch.float32, torch.device("cpu")
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert output_metas(stage, (TensorMeta((2, 4), f32),), cpu) == (TensorMeta((2, 4), torch.bfloat16),)
    assert output_metas(stage, (TensorMeta((2, 4), f32),), cpu) == (TensorMeta((2, 4), f32),)


def test_the_shape_probe_runs_in_the_modules_mode():
    f32, cpu = torch.float32, torch.device("cpu")
    stage = nn.Sequential(nn.Linear(4, 4), TrainOnlyAux())
    assert output_metas(stage, (TensorMeta((2, 4), f32),), cpu) == (TensorMeta((2, 4), f32),
                                                                      TensorMeta((2,), f32))
    stage.eval()
    assert output_metas(stage, (TensorMeta((2, 4), f32),), cpu) == (TensorMeta((2, 4), f32),)


class LayerDrop(nn.Module):
    """Skips its layer at random in training, drawing from Python's own generator (as Hugging Face's
    LayerDrop does): a probe that draws too would shift every later decision."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * 1.0 if self.training and random.random() < 0.5 else self.lin(x)


class Teacher(nn.Module):
    """Updates a frozen EMA copy of its weight in training (BYOL, DINO): once per real forward."""

    def __init__(self) -> None:
        super().__init__()
        self.lin, self.ema = nn.Linear(4, 4), nn.Parameter(torch.zeros(4, 4), requires_grad=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.training:
            with torch.no_grad():
                self.ema.mul_(0.5).add_(self.lin.weight, alpha=0.5)
        return self.lin(x) + x @ self.ema


class LazyCache(nn.Module):
    """Fills a dict cache and a buffer registered as None on its first forward (rotary tables)."""

    def __init__(self) -> None:
        super().__init__()
        self.lin, self.cache = nn.Linear(4, 4), {}
        self.register_buffer("table", None)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.table is None:
            self.table = torch.ones(x.shape[1], device=x.device)
        scale = self.cache.setdefault(x.shape[1], torch.full((x.shape[1],), 2.0, device=x.device))
        return self.lin(x) * self.table * scale


def _seeded() -> None:
    torch.manual_seed(3)
    random.seed(3)


@pytest.mark.parametrize("case", ["layerdrop", "teacher under autocast", "caches", "lazy then dropout"])
def test_the_first_step_equals_the_unpipelined_model_whatever_the_stage_keeps(case):
    """The shape probe draws from no generator, updates no training-only state and leaves no meta
    tensor behind (review of the meta-device probe): losses, gradients and state as unpipelined."""
    builders = {"layerdrop": LayerDrop, "teacher under autocast": Teacher, "caches": LazyCache,
                "lazy then dropout": lambda: nn.Sequential(nn.LazyLinear(4), nn.Dropout(0.5))}
    _seeded()
    first, last = builders[case](), nn.Linear(4, 4)
    ref = copy.deepcopy(nn.Sequential(first, last))
    x, y = torch.randn(4, 4), torch.randn(4, 4)
    autocast = torch.autocast("cpu", dtype=torch.bfloat16, enabled="autocast" in case)
    plan = baseline_plan("interleaved-1f1b", Problem(p=1, m=2, v=2))
    _seeded()
    with autocast:
        loss = PipelineRunner(plan, {0: first, 1: last}, mlp_loss).step(x, target=y)
    _seeded()
    with autocast:
        want = sum(mlp_loss(ref(xs), ys).float() / 2 for xs, ys in zip(x.chunk(2), y.chunk(2), strict=True))
    want.backward()
    torch.testing.assert_close(loss.float(), want.detach(), atol=1e-3, rtol=1e-2)
    got = dict(nn.Sequential(first, last).named_parameters())
    for name, p in ref.named_parameters():
        torch.testing.assert_close(got[name].detach(), p.detach(), msg=name)  # the EMA copy too
        if p.grad is not None:
            torch.testing.assert_close(got[name].grad, p.grad, atol=1e-3, rtol=1e-2, msg=name)
