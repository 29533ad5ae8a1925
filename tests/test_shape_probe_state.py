# sed -i '102s/isinstance(value, dict | list)/isinstance(value, dict)/' runtime/shape_probe.py
# sed -i '143s/lazy = any(/lazy = all(/' runtime/shape_probe.py
"""What the shape probe must leave as it found it, in the cases the earlier tests did not reach: a
list a forward appends to, a stage mixing lazy and initialised layers."""

from __future__ import annotations

import copy

import torch
from torch import nn

from schedc.baselines import baseline_plan
from schedc.problem import Problem
from schedc.runtime import PipelineRunner
from schedc.runtime.models import mlp_loss
from schedc.runtime.shape_probe import output_metas
from schedc.runtime.shapes import TensorMeta


class Journal(nn.Module):
    """Appends each input it sees to a plain list (a debugging or caching habit)."""

    def __init__(self) -> None:
        super().__init__()
        self.lin, self.seen = nn.Linear(4, 4), []

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.seen.append(x)
        return self.lin(x)


def test_a_list_the_forward_appends_to_is_put_back() -> None:
    """The meta forward's entries of a list were left there: a meta tensor the real forward would
    then meet."""
    stage = Journal()
    assert output_metas(stage, (TensorMeta((2, 4), torch.float32),), torch.device("cpu")) == (
        TensorMeta((2, 4), torch.float32),)
    assert stage.seen == []


def test_a_stage_with_a_lazy_layer_beside_an_initialised_one_draws_as_unpipelined() -> None:
    """The probe draws a lazy layer's initial weights from torch's generator as the real first
    forward would; only where every parameter was lazy was the generator left unforked, so a
    stage with one initialised layer restored the state and its dropout then reused those draws."""
    torch.manual_seed(3)
    first = nn.Sequential(nn.Linear(4, 4), nn.LazyLinear(4), nn.Dropout(0.5))
    last = nn.Linear(4, 4)
    ref = copy.deepcopy(nn.Sequential(first, last))
    x, y = torch.randn(4, 4), torch.randn(4, 4)
    plan = baseline_plan("interleaved-1f1b", Problem(p=1, m=2, v=2))
    torch.manual_seed(5)
    loss = PipelineRunner(plan, {0: first, 1: last}, mlp_loss).step(x, target=y)
    torch.manual_seed(5)
    want = sum(mlp_loss(ref(xs), ys) / 2 for xs, ys in zip(x.chunk(2), y.chunk(2), strict=True))
    torch.testing.assert_close(loss, want.detach())
    torch.testing.assert_close(first[1].weight, ref[0][1].weight)
