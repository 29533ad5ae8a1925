# sed -i '126s/(b0, b1), clock.seconds(b1, b2)/(b1, b2), clock.seconds(b0, b1)/' runtime/profile.py
# sed -i '126s/clock.seconds(f0, f1)/clock.seconds(f0, b0)/' runtime/profile.py
# sed -i '155s/statistics.median(/max(/' runtime/profile.py
# sed -i '127s/for k in range(len(stages))/for k in reversed(range(len(stages)))/' runtime/profile.py
"""Which measured interval becomes which stage's F, I and W, checked with a fake clock: each stage's
forward, I and W advance it by known amounts, so every figure ``time_stages`` returns is exact."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch
from torch import nn

import schedc.runtime.profile as profile
from schedc.runtime.models import mlp_loss
from schedc.runtime.profile import StageTimes, time_stages

TF, TB, TW = (1.0, 2.0), (16.0, 32.0), (256.0, 512.0)  # per stage; sums of these are exact floats
SLOW = 4096.0  # added to stage 0's forward in the first timed run only


class _Ticking(nn.Module):
    """A Linear whose forward advances the fake clock by its stage's forward time."""

    def __init__(self, clock: list[float], k: int, runs: list[int]) -> None:
        super().__init__()
        self.lin, self.clock, self.k, self.runs = nn.Linear(4, 4), clock, k, runs

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.k == 0:
            self.runs[0] += 1
        self.clock[0] += TF[self.k] + (SLOW if self.k == 0 and self.runs[0] == 1 else 0.0)
        return torch.tanh(self.lin(x))


def _fake_clock(monkeypatch: pytest.MonkeyPatch) -> tuple[list[nn.Module], list[int]]:
    clock, runs, current = [0.0], [0], [0]
    stages = [_Ticking(clock, k, runs) for k in range(2)]
    monkeypatch.setattr(profile, "time", SimpleNamespace(perf_counter=lambda: clock[0]))
    original_input, original_weight = profile.backward_input, profile.backward_weight

    def timed_input(outputs, grads, inputs, params):
        current[0] = next(k for k, s in enumerate(stages) if any(p is q for p in params
                                                                 for q in s.parameters()))
        clock[0] += TB[current[0]]
        return original_input(outputs, grads, inputs, params)

    def timed_weight(work):
        clock[0] += TW[current[0]]
        return original_weight(work)

    monkeypatch.setattr(profile, "backward_input", timed_input)
    monkeypatch.setattr(profile, "backward_weight", timed_weight)
    return stages, runs


def test_each_interval_is_charged_to_its_own_stage_and_action(monkeypatch: pytest.MonkeyPatch) -> None:
    """F, I and W of stage k are exactly the amounts stage k's forward, I and W advanced the clock:
    swapping I and W, measuring F up to the start of the backward, or listing the stages in the
    backward's (reversed) order would each give other figures."""
    stages, _ = _fake_clock(monkeypatch)
    times = time_stages(stages, torch.randn(3, 4), mlp_loss, torch.randn(3, 4), repeats=1, warmup=0)
    assert times == [StageTimes(TF[0] + SLOW, TB[0], TW[0]), StageTimes(TF[1], TB[1], TW[1])]


def test_the_median_of_the_repeats_is_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    """One slow run among three (a hiccup of the machine) must not set the figure: the median is
    the two others' value, where the largest or the mean would keep the outlier."""
    stages, runs = _fake_clock(monkeypatch)
    times = time_stages(stages, torch.randn(3, 4), mlp_loss, torch.randn(3, 4), repeats=3, warmup=0)
    assert runs[0] == 3
    assert times == [StageTimes(TF[0], TB[0], TW[0]), StageTimes(TF[1], TB[1], TW[1])]
