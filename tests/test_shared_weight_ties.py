"""A Parameter shared in Python by stages on different ranks must be covered by one tie listing every
stage that holds it, under any of its names there.

A tie that leaves out one holder (a weight used by three stages, tied on two) leaves that stage's
copy training apart without a word, so it is refused.
"""

from __future__ import annotations

from schedc.problem import Problem
from schedc.runtime.models import mlp
from schedc.runtime.shared_weights import shared_across_ranks, untied_errors

WIDTH = 8


def test_a_tie_that_leaves_out_one_stage_holding_the_weight_is_refused():
    problem = Problem(p=3, m=3)
    layers = mlp(3, WIDTH)
    layers[2].weight = layers[4].weight = layers[0].weight
    shared = shared_across_ranks(layers, [(0, 2), (2, 4), (4, 6)], problem)
    assert [[s for s, _ in weight] for weight in shared] == [[0, 1, 2]]
    assert untied_errors(shared, [[(0, "0.weight"), (1, "0.weight"), (2, "0.weight")]]) == []
    errors = untied_errors(shared, [[(0, "0.weight"), (1, "0.weight")]])
    assert errors == ["stage 0's '0.weight' and stage 1's '0.weight' and stage 2's '0.weight' are one "
                      "Parameter in Python, held on different ranks: declare them as a tie, "
                      "ties=[stage_parameters(layers, problem, param)], or each rank's copy trains apart"]

