# sed -i '172s/_dense(\[None\] \* len(inputs), inputs)/tuple(inputs)/' runtime/split_backward.py
# sed -i '295s/_dense(\[None\] \* len(inputs), inputs)/tuple(inputs)/' runtime/split_backward.py
# sed -i '273s/if grad is not None:/if True:/' runtime/split_backward.py
# sed -i '210s/below & //' runtime/split_backward.py
"""The split backward's less travelled paths (runtime/split_backward.py): a stage whose outputs
need no gradient, a join that leaves some of its outputs without one (an LSTM that returns only its
sequence), and what I frees above a weight that joins the input's path twice."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from schedc.baselines import baseline_plan
from schedc.problem import Problem
from schedc.runtime import PipelineRunner, split_stages
from schedc.runtime.models import mlp_loss
from schedc.runtime.split_backward import backward_input, backward_weight


class Frozen(nn.Module):
    """A middle stage whose output is cut from the graph (a frozen feature transform): its I has
    no output that requires grad."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.lin(x).detach()


@pytest.mark.parametrize(("name", "split"), [("interleaved-zb", True), ("interleaved-1f1b", False)])
def test_a_stage_without_differentiable_outputs_sends_zero_input_gradients(name: str, split: bool) -> None:
    """Stage 1's output needs no gradient, so nothing flows back to stage 0: its weights get zero
    gradients, as the unpipelined backward gives them none. A bug that sent stage 1's inputs
    themselves as the "gradient" (instead of zeros), in I or in B, gave stage 0 nonzero ones."""
    problem = Problem(p=1, m=2, v=3, split=split)
    torch.manual_seed(0)
    layers = [nn.Linear(4, 4), Frozen(), nn.Linear(4, 4)]
    runner = PipelineRunner(baseline_plan(name, problem), split_stages(layers, problem, 0), mlp_loss)
    runner.step(torch.randn(4, 4), target=torch.randn(4, 4))
    first = list(layers[0].parameters())
    assert all(p.grad is None or not p.grad.any() for p in first)
    assert layers[2].weight.grad is not None and layers[2].weight.grad.any()  # the last stage trained


class LastOutputOnly(nn.Module):
    """An LSTM of which only the sequence output is used: on CPU its layer node is a join with three
    outputs, two of which (the final hidden and cell states) get no gradient."""

    def __init__(self) -> None:
        super().__init__()
        self.lstm = nn.LSTM(4, 4, batch_first=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.lstm(x)[0]


def test_a_join_with_outputs_without_gradient_splits_exactly() -> None:
    """W seeds each join only with the gradients I recorded there: seeding the unused outputs too
    (None) made W fail with "grad can be implicitly created only for scalar outputs"."""
    torch.manual_seed(0)
    module, x, g = LastOutputOnly(), torch.randn(2, 3, 4), torch.randn(2, 3, 4)
    params = list(module.parameters())
    xi = x.clone().requires_grad_()
    want = torch.autograd.grad(module(xi), [xi, *params], g)
    xi = x.clone().requires_grad_()
    (dx,), work = backward_input([module(xi)], [g], [xi], params)
    backward_weight(work)
    torch.testing.assert_close(dx, want[0])
    for p, expected in zip(params, want[1:], strict=True):
        torch.testing.assert_close(p.grad, expected)


class TwiceThenTanh(nn.Module):
    """One Linear used twice (a group joining at two nodes), then a tanh above the upper join."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(6, 6)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.lin(torch.relu(self.lin(x))))


def test_i_frees_what_the_nodes_above_a_multi_join_group_saved() -> None:
    """W reruns only the input-path nodes between a group's joins; the tanh above the upper join is
    not among them, so I frees what it saved (its output). Keeping every node above the joins held
    that activation until W, for nothing; W's gradients stay exact either way."""
    torch.manual_seed(0)
    module, x = TwiceThenTanh(), torch.randn(4, 6)
    params = list(module.parameters())
    want = torch.autograd.grad(module(x.clone().requires_grad_()), params, torch.ones(4, 6))
    xi = x.clone().requires_grad_()
    out = module(xi)
    _, work = backward_input([out], [torch.ones_like(out)], [xi], params)
    with pytest.raises(RuntimeError, match="freed this saved tensor"):
        _ = out.grad_fn._saved_result
    backward_weight(work)
    for p, expected in zip(params, want, strict=True):
        torch.testing.assert_close(p.grad, expected)
