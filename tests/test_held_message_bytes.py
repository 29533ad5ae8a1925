"""``record_memory``'s other bytes count the messages in flight: a sent activation stays held until a
message from the peer proves it delivered (on gloo, its gradient coming back), and posted receive
buffers are held from the moment they are posted.

The other tests bound these bytes only from above, so a recorder that left every flight out (and
reported 0 where a boundary tensor is held) passed them. Here the first rank's first forward has
sent one microbatch's activation whose gradient cannot have come back yet: it holds at least that.
"""

from __future__ import annotations

import torch

from schedc.problem import Problem

WIDTH, ROWS = 64, 8


def _other_held(rank: int, _world: int, plan) -> list[tuple[str, int]]:
    from schedc.runtime import PipelineRunner, split_stages
    from schedc.runtime.models import mlp, mlp_loss

    torch.manual_seed(0)
    layers = mlp(plan.problem.num_stages, WIDTH)
    x, y = torch.randn(ROWS * plan.problem.m, WIDTH), torch.randn(ROWS * plan.problem.m, WIDTH)
    runner = PipelineRunner(plan, split_stages(layers, plan.problem, rank), mlp_loss, record_memory=True)
    runner.step(x, target=y)
    return [(held.action.kind, held.other) for held in runner.memory]


def test_a_sent_activation_counts_until_its_gradient_comes_back():
    from schedc.baselines import baseline_plan
    from schedc.runtime.launch import run_local

    plan = baseline_plan("1f1b", Problem(p=2, m=4))
    first, _ = run_local(_other_held, 2, plan, timeout=120)
    boundary = ROWS * WIDTH * 4  # one microbatch's float32 activation
    kind, other = first[0]
    assert kind == "F"
    assert other >= boundary, first
    assert first[-1][1] == 0  # and every message is gone by the step's end
