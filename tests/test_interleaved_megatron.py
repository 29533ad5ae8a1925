# sed -i '43s/2 \* (p - 1 - r)/2 * (p - r)/' schedc/baselines/interleaved.py
# sed -i '38s/(chunk if forward else v - 1 - chunk)/chunk/' schedc/baselines/interleaved.py
"""schedc's interleaved 1F1B against Megatron-Core's order, re-derived from its source
(NVIDIA/Megatron-LM, megatron/core/pipeline_parallel/schedules.py at 00611e6:
``get_schedule_table`` with microbatch groups of p, warm-up ``2 * (p - 1 - r) + (v - 1) * p``
forwards, then one forward and one backward, then the backwards; a backward's chunk is the
forward table's reversed, its microbatch the oldest one saved for that chunk). The tests against
torch's ``ScheduleInterleaved1F1B`` are in test_baselines.py; this one checks the Megatron claim."""

from __future__ import annotations

import pytest

from schedc.baselines import baseline_plan
from schedc.problem import Problem


def _megatron_orders(p: int, m: int, v: int) -> list[list[str]]:
    """Per rank, Megatron's compute order as schedc tokens (chunk c on rank r is stage c*p + r)."""
    table = [(mb, c) for lo in range(0, m, p) for c in range(v) for mb in range(lo, min(lo + p, m))]
    total = m * v

    def forward(r: int, k: int) -> str:
        mb, c = table[k]
        return f"{c * p + r}F{mb}"

    def backward(r: int, k: int) -> str:
        mb, c = table[k]
        return f"{(v - 1 - c) * p + r}B{mb}"

    orders = []
    for r in range(p):
        warm = min(2 * (p - 1 - r) + (v - 1) * p, total)
        order = [forward(r, k) for k in range(warm)]
        for k in range(total - warm):
            order += [forward(r, k + warm), backward(r, k)]
        orders.append(order + [backward(r, k) for k in range(total - warm, total)])
    return orders


@pytest.mark.parametrize("p", [2, 3, 4, 8])
@pytest.mark.parametrize("v", [2, 3, 4])
@pytest.mark.parametrize("rounds", [1, 2, 3, 4])
def test_each_rank_runs_megatrons_order_where_p_divides_m(p: int, v: int, rounds: int) -> None:
    problem = Problem(p=p, m=rounds * p, v=v, split=False)
    plan = baseline_plan("interleaved-1f1b", problem)
    assert [[str(a) for a in order] for order in plan.orders] == _megatron_orders(p, rounds * p, v)
