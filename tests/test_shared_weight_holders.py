# sed -i '62s/remove_duplicate=False/remove_duplicate=True/' runtime/shared_weights.py
# sed -i '88s/all(any((s, n)/all(all((s, n)/' runtime/shared_weights.py
"""A Python-shared weight that ``split_stages`` records (runtime/shared_weights.py) carries every name it
has in each stage holding it, and a tie naming it by any one of those names covers it."""

from __future__ import annotations

import torch
from torch import nn

from schedc.problem import Problem
from schedc.runtime.shared_weights import shared_across_ranks, untied_errors


class TwoNames(nn.Module):
    """One Linear registered under two names (``a`` and ``b``): its weight has two names."""

    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Linear(4, 4)
        self.b = self.a

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.b(self.a(x))


def test_a_tie_may_name_a_weight_by_any_of_its_names_in_a_stage() -> None:
    """Stage 0 holds the weight as ``0.a.weight`` and ``0.b.weight``: every name is recorded, and a tie
    naming either one with stage 1's covers it (it was refused as untied)."""
    first = TwoNames()
    second = nn.Linear(4, 4)
    second.weight = first.a.weight
    shared = shared_across_ranks([first, second], [(0, 1), (1, 2)], Problem(p=2, m=2))
    assert shared == (((0, frozenset({"0.a.weight", "0.b.weight"})), (1, frozenset({"0.weight"}))),)
    for name in ("0.a.weight", "0.b.weight"):
        assert untied_errors(shared, [[(0, name), (1, "0.weight")]]) == []
    assert len(untied_errors(shared, [])) == 1
