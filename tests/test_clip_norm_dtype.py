# sed -i '59s/total.to(dtype)/total/' runtime/clip.py
"""clip_grad_norm_ returns the norm in the gradients' dtype, as torch's clip_grad_norm_ does: the
float64 it sums in across ranks is internal."""

from __future__ import annotations

import copy

import pytest

from schedc.problem import Problem

torch = pytest.importorskip("torch")

from torch import nn  # noqa: E402

from tests.runtime_cases import WIDTH, batch  # noqa: E402


def test_the_returned_norm_has_the_gradients_dtype_and_torchs_value() -> None:
    """A float32 model gets a float32 norm equal to torch's on the unpipelined model (a float64
    norm would promote whatever the caller computes with it)."""
    from schedc.baselines import baseline_plan
    from schedc.runtime import PipelineRunner, clip_grad_norm_, split_stages
    from schedc.runtime.models import mlp, mlp_loss

    problem = Problem(p=1, m=2)
    layers = mlp(2, WIDTH)
    model = nn.Sequential(*copy.deepcopy(layers))
    runner = PipelineRunner(baseline_plan("1f1b", problem), split_stages(layers, problem, 0), mlp_loss)
    x, y = batch(problem.m)
    runner.step(x, target=y)
    total = clip_grad_norm_(runner, 1e-3)
    for xs, ys in zip(x.chunk(problem.m), y.chunk(problem.m), strict=True):
        (nn.functional.mse_loss(model(xs), ys) / problem.m).backward()
    want = torch.nn.utils.clip_grad_norm_(model.parameters(), 1e-3)
    assert want.dtype == torch.float32
    assert total.dtype == want.dtype
    assert float(total) == pytest.approx(float(want), rel=1e-5)
