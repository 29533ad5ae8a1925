"""Ties name their copies by (stage, parameter name); what the runner does with the edges of that.

A stage one past the last or a negative one (Python would index the stage list from its end) must
be refused as outside the plan, ``True`` is not stage 1, and a tie listing one stage twice (a typo
for the other copy's stage) ties nothing: each is refused before anything runs, not left to fail
later with a bare IndexError or KeyError or to be taken silently for another stage. And the
copies take the values of the copy on the tie's *lowest* stage, whatever order the tie lists them
in (the module doc): a tie listed last stage first must not overwrite the embedding with the head.
"""

from __future__ import annotations

import pytest
import torch

from schedc.baselines import baseline_plan
from schedc.problem import Problem
from schedc.runtime import PipelineRunner, PlanMismatchError, split_stages
from schedc.runtime.launch import run_local
from schedc.runtime.models import mlp, mlp_loss

WIDTH = 8


@pytest.mark.parametrize("tie, message", [
    ([(0, "0.weight"), (0, "0.weight")], r"tie 0 needs two or more distinct stages, got \[0, 0\]"),
    ([(0, "0.weight"), (2, "0.weight")], "tie 0 names stage 2, outside the plan's 2 stages"),
    ([(-1, "0.weight"), (0, "0.weight")], "tie 0 names stage -1, outside the plan's 2 stages"),
    ([(0, "0.weight"), (True, "0.weight")], r"tie 0 must be a list of \(stage, parameter name\) pairs"),
])
def test_a_tie_naming_a_stage_the_plan_lacks_is_refused(tie, message):
    problem = Problem(p=1, m=2, v=2)
    stages = split_stages(mlp(2, WIDTH), problem, 0)
    with pytest.raises(PlanMismatchError, match=message):
        PipelineRunner(baseline_plan("interleaved-1f1b", problem), stages, mlp_loss, ties=[tie])


def _listed_last_first(rank: int, _world: int) -> list[list[float]]:
    problem = Problem(p=2, m=2)
    layers = mlp(2, WIDTH)
    PipelineRunner(baseline_plan("1f1b", problem), split_stages(layers, problem, rank), mlp_loss, timeout=60,
                   ties=[[(1, "0.weight"), (0, "0.weight")]])
    return (layers[0] if rank == 0 else layers[2]).weight.tolist()


def test_tied_copies_take_the_lowest_stages_values_whatever_the_order_listed():
    layers = mlp(2, WIDTH)
    assert not torch.equal(layers[0].weight, layers[2].weight)  # the copies start apart
    want = layers[0].weight.tolist()
    assert run_local(_listed_last_first, 2) == [want, want]
