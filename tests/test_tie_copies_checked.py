# sed -i '171s/here_ok and torch.equal/torch.equal/' runtime/tied.py
# sed -i '69s/if all(s in stages/if any(s in stages/' runtime/tied.py
"""A rank holding two copies of one tie checks them against each other, on the root and on a peer
alike, and every rank holding the tie fails at once with a PlanMismatchError: a float64 copy beside
a float32 one would otherwise take the root's values by a silent conversion (the tie training copies
of two dtypes), and a root failing alone before the shape check's exchange left its peer waiting for
the tie's shape until the timeout."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")


def _build(rank: int, double_stage: int) -> str:
    """Looped p=2 v=2: rank 0 holds stages 0 and 2, rank 1 stages 1 and 3. Stage 0's first weight
    is tied with stage 1's and with ``double_stage``'s, whose copy is float64."""
    from schedc.baselines import baseline_plan
    from schedc.problem import Problem
    from schedc.runtime import PipelineRunner, split_stages
    from schedc.runtime.models import mlp, mlp_loss

    problem = Problem(p=2, m=2, v=2)
    layers = mlp(4, 8)
    first = layers[2 * double_stage]
    first.weight = torch.nn.Parameter(first.weight.detach().double())
    ties = [[(0, "0.weight"), (1, "0.weight"), (double_stage, "0.weight")]]
    try:
        PipelineRunner(baseline_plan("interleaved-1f1b", problem), split_stages(layers, problem, rank),
                       mlp_loss, timeout=10, ties=ties)
        return "built"
    except Exception as err:  # the test compares what each rank raised
        return type(err).__name__


def _peer_holds_both(rank: int, _world: int) -> str:
    return _build(rank, 3)


def _root_holds_both(rank: int, _world: int) -> str:
    return _build(rank, 2)


@pytest.mark.parametrize("worker", [_peer_holds_both, _root_holds_both])
def test_two_copies_on_one_rank_that_differ_fail_every_holder_at_once(worker) -> None:
    """Rank 1 (stages 1 and 3) or the root, rank 0 (stages 0 and 2), holds a float32 and a float64
    copy: both ranks refuse the tie, neither waits for the other's timeout."""
    from schedc.runtime.launch import run_local

    assert run_local(worker, 2) == ["PlanMismatchError", "PlanMismatchError"]
