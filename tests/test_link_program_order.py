# sed -i '130s/if self.links is not None else lower/if self.links is None else lower/' runtime/runner.py
"""A runner with link groups (the NCCL transport, ``link_groups=True`` on CPU) posts its receives
in the order each peer sends (runtime/runner.py picks ``lowering.in_send_order`` then): NCCL pairs
messages by order, so the plain lowering would pair wrong tensors on a plan such as zb-v, where
gloo's tags hide it (so the gradients alone cannot tell)."""

from __future__ import annotations

from schedc.baselines import baseline_plan
from schedc.problem import Problem
from schedc.runtime import PipelineRunner, split_stages
from schedc.runtime.launch import run_local
from schedc.runtime.lowering import PostRecv, send_orders
from schedc.runtime.models import mlp, mlp_loss

PROBLEM = Problem(p=2, m=4, v=2, placement="vshape")


def _received(rank: int, _world: int) -> list:
    """(peer, key) of each receive in the program of this rank's link-group runner."""
    plan = baseline_plan("zb-v", PROBLEM)
    runner = PipelineRunner(plan, split_stages(mlp(PROBLEM.num_stages, 4), PROBLEM, rank), mlp_loss,
                            timeout=60, link_groups=True)
    assert runner.links is not None
    return [(op.peer, op.key) for op in runner.program if isinstance(op, PostRecv)]


def test_link_group_runners_receive_in_each_peers_send_order() -> None:
    """zb-v's own receive order differs from its send order (``test_runtime_links``): the runner's
    program must follow the send order on every link, or NCCL pairs the wrong tensors."""
    sent = send_orders(PROBLEM, baseline_plan("zb-v", PROBLEM).orders)
    for rank, received in enumerate(run_local(_received, 2, timeout=120)):
        for peer in range(PROBLEM.p):
            keys = [key for src, key in received if src == peer]
            assert keys == sent.get((peer, rank), [])
