# sed -i '344s/\[p for p in final if p.grad is not None\]/list(final)/' runtime/runner.py
# sed -i '380s/if p.requires_grad\]/]/' runtime/runner.py
# sed -i '201s/self.params = self._trainable()/pass/' runtime/runner.py
"""What ``grads_ready`` is handed (runtime/runner.py): the parameters whose gradient for the step is
final and that got one, never a parameter without a gradient (an unused layer) nor a frozen one,
whatever its ``.grad`` still holds from before it was frozen."""

from __future__ import annotations

import torch
from torch import nn

from schedc.baselines import baseline_plan
from schedc.problem import Problem
from schedc.runtime import PipelineRunner, split_stages
from schedc.runtime.models import mlp_loss


class WithSpare(nn.Module):
    """A Linear next to a registered one its forward never uses."""

    def __init__(self) -> None:
        super().__init__()
        self.lin, self.spare = nn.Linear(4, 4), nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.lin(x)


def _runner(layers: list[nn.Module], handed: list[torch.Tensor]) -> PipelineRunner:
    problem = Problem(p=1, m=2, v=2)
    return PipelineRunner(baseline_plan("interleaved-zb", problem), split_stages(layers, problem, 0),
                          mlp_loss, grads_ready=handed.extend)


def test_a_parameter_without_gradient_is_not_handed_over() -> None:
    """The spare Linear gets no gradient: handing it over made a ``grads_ready`` that all-reduces
    ``p.grad`` fail on None."""
    layers = [WithSpare(), nn.Linear(4, 4)]
    handed: list[torch.Tensor] = []
    torch.manual_seed(0)
    _runner(layers, handed).step(torch.randn(4, 4), target=torch.randn(4, 4))
    assert all(p.grad is not None for p in handed)
    want = [*layers[0].lin.parameters(), *layers[1].parameters()]
    assert sorted(id(p) for p in handed) == sorted(id(p) for p in want)


def test_a_layer_frozen_between_steps_is_not_handed_over() -> None:
    """Frozen after a first step without clearing its gradient: the second step gives it none, so
    ``grads_ready`` must not get it (a stale ``.grad`` would be all-reduced again); the runner reads
    which parameters train at each step, not once when it was built."""
    layers = [nn.Linear(4, 4), nn.Linear(4, 4)]
    handed: list[torch.Tensor] = []
    runner = _runner(layers, handed)
    torch.manual_seed(0)
    runner.step(torch.randn(4, 4), target=torch.randn(4, 4))
    assert len(handed) == 4  # both Linears' weight and bias
    layers[0].requires_grad_(False)
    handed.clear()
    runner.step(torch.randn(4, 4), target=torch.randn(4, 4))
    assert sorted(id(p) for p in handed) == sorted(id(p) for p in layers[1].parameters())
