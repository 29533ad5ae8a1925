# sed -i '131s/isinstance(value, dict | list)/isinstance(value, dict)/' runtime/shape_probe.py
# sed -i '188s/lazy = any(/lazy = all(/' runtime/shape_probe.py
# sed -i '60s/, _random_state_kept():/:/' runtime/shape_probe.py
# sed -i '95s/if _plain_object(v)\]/if False]/' runtime/shape_probe.py
# sed -i '136s/if isinstance(inner, dict | list):/if False:/' runtime/shape_probe.py
# sed -i '176s/and not isinstance(value, _NOT_PLAIN)/and not callable(value)/' runtime/shape_probe.py
"""What the shape probe must leave as it found it, in the cases the earlier tests did not reach: a
list a forward appends to, a stage mixing lazy and initialised layers."""

from __future__ import annotations

import copy
import random

import numpy as np
import pytest
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


class PlainCounters(nn.Module):
    """Counts its forwards in tensors held as plain attributes, neither parameter nor buffer, in
    every mode: one updated in place, one rebound; ``branch`` takes a data-dependent path, which the
    meta device cannot run (the probe then runs on zeros)."""

    def __init__(self, branch: bool = False) -> None:
        super().__init__()
        self.lin, self.branch = nn.Linear(4, 4), branch
        self.in_place, self.rebound = torch.zeros((), dtype=torch.long), torch.zeros(())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.in_place += 1
        self.rebound = self.rebound + 1
        h = self.lin(x)
        return (h * 2 if float(h.detach().sum()) > 0 else h) if self.branch else h


@pytest.mark.parametrize("branch", [False, True], ids=["meta", "zeros"])
def test_tensors_held_as_plain_attributes_keep_their_values_through_the_probe(branch: bool) -> None:
    """The meta forward swaps parameters and buffers only: ``self.count += 1`` on a plain tensor
    attribute was a real update, so every probed stage counted m + 1 forwards in a step of m (and
    one more per new shape with ``variable_shapes``)."""
    counters = PlainCounters(branch)
    in_place = counters.in_place
    stages = {0: nn.Sequential(counters), 1: nn.Linear(4, 4)}
    plan = baseline_plan("interleaved-1f1b", Problem(p=1, m=2, v=2))
    PipelineRunner(plan, stages, mlp_loss).step(torch.randn(4, 4), target=torch.randn(4, 4))
    assert (int(counters.in_place), float(counters.rebound)) == (2, 2)  # one per microbatch
    assert counters.in_place is in_place


class InferenceTable(nn.Module):
    """Holds a table made under ``torch.inference_mode`` as a plain attribute (positions built once)."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)
        with torch.inference_mode():
            self.table = torch.arange(4.0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.lin(x) + self.table


def test_an_inference_tensor_held_as_an_attribute_does_not_fail_the_probe() -> None:
    """Such a tensor has no version counter: reading it raised, and the stage was refused as failing
    on its input ('Inference tensors do not track version counter')."""
    stages = {0: InferenceTable(), 1: nn.Linear(4, 4)}
    plan = baseline_plan("interleaved-1f1b", Problem(p=1, m=2, v=2))
    loss = PipelineRunner(plan, stages, mlp_loss).step(torch.randn(4, 4), target=torch.randn(4, 4))
    assert loss is not None and torch.isfinite(loss)


class Rope:
    """A plain helper a block calls (it has ``__call__``): a cache of tables keyed by length, a table
    made on first use and a tensor counting its calls in place."""

    def __init__(self) -> None:
        self.cos, self.tables, self.calls = None, {}, torch.zeros((), dtype=torch.long)

    def __call__(self, n: int, device: torch.device) -> torch.Tensor:
        self.calls += 1
        if self.cos is None:
            self.cos = torch.arange(n, device=device, dtype=torch.float32).cos()
        self.tables.setdefault(n, self.cos)
        return self.cos


class Rotary(nn.Module):
    """Uses a ``Rope``, draws from Python's and NumPy's generators (a LayerDrop written with them),
    and with ``branch`` takes a data-dependent path (the probe then runs on zeros)."""

    def __init__(self, branch: bool) -> None:
        super().__init__()
        self.lin, self.rope, self.branch = nn.Linear(4, 4), Rope(), branch

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.lin(x) + self.rope(x.shape[-1], x.device) * (random.random() + float(np.random.rand()))
        return (h * 2 if float(h.detach().sum()) > 0 else h) if self.branch else h


@pytest.mark.parametrize("branch", [False, True], ids=["meta", "zeros"])
def test_a_called_helpers_caches_counters_and_the_random_streams_are_put_back(branch: bool) -> None:
    """A helper with ``__call__`` was not saved: its meta table reached the first step ("Tensor on
    device meta is not on the expected device cpu"), a dict in it kept the meta entry and its tensor
    counter counted the probe; the probe on zeros left Python's and NumPy's generators one draw
    further."""
    stage = Rotary(branch)
    random.seed(1)
    np.random.seed(1)
    python, numpy_state = random.getstate(), np.random.get_state()
    assert output_metas(stage, (TensorMeta((2, 4), torch.float32),), torch.device("cpu")) == (
        TensorMeta((2, 4), torch.float32),)
    if not branch:  # on zeros the helper's state is what the forward made, as the first step makes it
        assert stage.rope.cos is None and stage.rope.tables == {} and int(stage.rope.calls) == 0
    assert random.getstate() == python
    assert all(np.array_equal(a, b) for a, b in zip(np.random.get_state(), numpy_state, strict=True))


class Growing:
    """A table grown on demand beside the length it was grown to (a rotary cache), and a buffer
    resized in place."""

    def __init__(self) -> None:
        self.n, self.table, self.scratch = 2, torch.arange(2.0), torch.zeros(0)

    def __call__(self, n: int, device: torch.device) -> torch.Tensor:
        if n > self.n:
            self.table, self.n = torch.arange(float(n), device=device), n
        self.scratch.resize_(n).fill_(1)
        return self.table[:n]


class Grows(nn.Module):
    def __init__(self, real_device_tensor: bool) -> None:
        super().__init__()
        self.lin, self.grow, self.real = nn.Linear(6, 6), Growing(), real_device_tensor

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        bias = torch.zeros(6, device="cpu") if self.real else 0  # a real-device tensor: the meta run fails
        return self.lin(x) + self.grow(x.shape[-1], x.device) + bias


@pytest.mark.parametrize("real", [False, True], ids=["meta", "zeros"])
def test_a_helpers_table_stays_consistent_with_its_length(real: bool) -> None:
    """The review of the first fix: on zeros the helper's tensors were put back but not the length
    beside them (n = 6, the 2-long table: the first step failed on the sizes), and a tensor resized
    in place failed the restore, blamed on the input. On the meta device both come back; on zeros
    the helper keeps what the forward made, as the first step would make it."""
    stage = Grows(real)
    assert output_metas(stage, (TensorMeta((2, 6), torch.float32),), torch.device("cpu")) == (
        TensorMeta((2, 6), torch.float32),)
    assert stage.grow.n == len(stage.grow.table) and stage.grow.table.device.type == "cpu"
    assert (stage.grow.n, stage.grow.scratch.numel()) == ((2, 0) if not real else (6, 6))
    stage(torch.randn(2, 6))  # the real forward runs on what the probe left
