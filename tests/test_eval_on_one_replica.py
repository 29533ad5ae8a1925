# sed -i '265s/self._steps + (call != "eval")/self._steps + 1/' runtime/runner.py
"""Data-parallel replicas compare how many steps they began (runtime/runner.py ``_steps``), so a
replica that failed a step cannot pair its next one with the others' current one. ``eval`` is no
step: validating on one replica only (a common habit: the first replica's pipeline evaluates) must
not make the next training step refuse to pair."""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional

from schedc.baselines import baseline_plan
from schedc.problem import Problem
from schedc.runtime import PipelineRunner, split_stages
from schedc.runtime.launch import run_local


def _worker(rank: int, world: int) -> list[list[float]]:
    """Two one-rank pipelines averaged over both ranks; only replica 0 evaluates between steps."""
    import torch.distributed as dist

    pipelines = [dist.new_group([r]) for r in range(world)]
    dp = dist.new_group(list(range(world)))
    torch.manual_seed(0)
    layer = nn.Linear(4, 4)
    plan = baseline_plan("1f1b", Problem(p=1, m=2))
    runner = PipelineRunner(plan, split_stages([layer], plan.problem, 0), functional.mse_loss,
                            pipelines[rank], dp_group=dp, timeout=30)
    gen = torch.Generator().manual_seed(rank)
    runner.step(torch.randn(4, 4, generator=gen), torch.randn(4, 4, generator=gen))
    if rank == 0:
        runner.eval(torch.randn(4, 4, generator=gen))
    layer.weight.grad = layer.bias.grad = None
    x, y = torch.randn(4, 4, generator=gen), torch.randn(4, 4, generator=gen)
    runner.step(x, y)
    return [layer.weight.grad.flatten().tolist(), x.tolist(), y.tolist()]


def test_an_eval_on_one_replica_does_not_break_the_next_steps_pairing() -> None:
    """The second step succeeds on both replicas and gives each the average of their gradients."""
    results = run_local(_worker, 2, timeout=120)
    torch.manual_seed(0)
    ref = nn.Linear(4, 4)
    want = torch.zeros(16)
    for _, x, y in results:
        ref.zero_grad(set_to_none=True)
        functional.mse_loss(ref(torch.tensor(x)), torch.tensor(y)).backward()
        want += ref.weight.grad.flatten() / 2
    for grads, _, _ in results:
        torch.testing.assert_close(torch.tensor(grads), want)
