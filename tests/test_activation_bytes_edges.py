# sed -i '135s/base = t if t._base is None else t._base/base = t/' runtime/activation_bytes.py
# sed -i '136s/ or cached_weight_cast(t)//' runtime/activation_bytes.py
# sed -i '190s/ if units\[r\])/)/' runtime/activation_bytes.py
# sed -i '190s/default=Fraction(0)/default=Fraction(1)/' runtime/activation_bytes.py
# sed -i '208s/if unit else None/if unit else Fraction(problem.m)/' runtime/activation_bytes.py
# sed -i '162s/list) else/tuple) else/' runtime/activation_bytes.py
# sed -i '73s/if first and k == 0/if first/' runtime/activation_bytes.py
# sed -i '102s/if versions == \[t._version for t in inputs\]:/if True:/' runtime/activation_bytes.py
"""Edges of the activation byte counts and the model terms derived from them: a loss
module's own weight seen through a view, targets given as a list, autocast's cached weight
copies, the batch's ids passed on to a later stage, and ranks that hold nothing."""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction

import torch
from torch import nn

from schedc.baselines import baseline_plan
from schedc.problem import Problem
from schedc.runtime.activation_bytes import StageBytes, caps_for_budget, measured_w_mem, stage_bytes


class _Projected(nn.Module):
    """A loss with a large weight of its own, used through its transpose (a view of the weight)."""

    def __init__(self) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.randn(8000, 8) / 100)

    def forward(self, out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return ((out @ self.w.t()) ** 2).mean() + ((out - y) ** 2).mean()


def test_a_loss_modules_weight_is_no_activation_even_seen_through_a_view() -> None:
    """matmul saves w.t(), a view of the loss's weight: the weight (256,000 bytes) is held whatever
    the plan and must not count; the (4, 8000) product it makes does."""
    torch.manual_seed(0)
    loss = _Projected()
    held = stage_bytes([nn.Linear(8, 8)], torch.randn(4, 8), loss, torch.randn(4, 8), first=False)[0]
    assert 4 * 8000 * 4 <= held.forward < loss.w.nbytes


def test_a_target_given_as_a_list_is_not_an_activation() -> None:
    """The targets are held by the step whatever the plan; a loss taking a list of them saves them
    (here the product's factor) and they must not count either way the target comes."""

    def loss(out: torch.Tensor, target: list[torch.Tensor]) -> torch.Tensor:
        return (out * target[0]).mean()  # mul saves the target for the output's gradient

    torch.manual_seed(0)
    x, y = torch.randn(4, 8), torch.randn(4, 8)
    as_list = stage_bytes([nn.Linear(8, 8)], x, loss, [y], first=False)
    as_tensor = stage_bytes([nn.Linear(8, 8)], x, lambda o, t: loss(o, [t]), y, first=False)
    assert as_list == as_tensor


def test_w_mem_ignores_a_rank_that_holds_nothing() -> None:
    """A rank of stages without activations (unit 0) has no share to take: w_mem comes from the
    others (50 of 100 here), and all ranks holding nothing need none at all."""
    held = [StageBytes(100, 50), StageBytes(0, 0)]
    assert measured_w_mem(Problem(p=2, m=4), held) == Fraction(1, 2)
    assert measured_w_mem(Problem(p=2, m=4), [StageBytes(0, 0)] * 2) == 0


def test_a_rank_that_holds_nothing_gets_no_cap() -> None:
    """A unit of 0 bytes fits any budget: that rank has no cap (it was m, every microbatch, which
    another m solved from the file would bind), not 0, which would forbid it every forward."""
    problem = Problem(p=2, m=4)
    assert caps_for_budget(problem, (0, 100), 250) == (None, Fraction(5, 2))


def test_caps_from_a_budget_are_not_clipped_to_the_profiles_m() -> None:
    """A 1 GiB budget over a 20 KiB unit was written as m = 2 units, which `solve --problem F --m
    16` then kept: a cap that bound where the budget did not (7479 against 6375)."""
    problem = Problem(p=2, m=2)
    caps = caps_for_budget(problem, (20_480, 20_480), 2**30)
    assert caps == (Fraction(104_857, 2), Fraction(104_857, 2))  # 52,428.8 units, down to halves
    assert baseline_plan("gpipe", replace(problem, m=16, mem=caps)).fits()  # all 16 in flight: 16 units


def test_autocasts_cached_weight_copy_is_no_activation() -> None:
    """Under autocast the Linear saves the bfloat16 copy of its weight, cast once and cached for the
    region: a weight's kind (held whatever the plan), as the runner's record counts it. The stage's
    activations are the kept float32 input (512 bytes) and the bfloat16 input cast and output (256
    each): far below the 8,192-byte weight copy."""
    torch.manual_seed(0)
    stage = nn.Linear(64, 64)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        held = stage_bytes([stage], torch.randn(2, 64), first=False)[0]
    assert held.forward == 512 + 256 + 256  # not a byte of the 8,192-byte copy


class _PassesIds(nn.Module):
    """A first stage that passes the batch's token ids on beside its hidden state."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor, ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.lin(x), ids


class _LooksUp(nn.Module):
    """A later stage that indexes a table by the ids (indexing saves them for its backward)."""

    def __init__(self) -> None:
        super().__init__()
        self.table = nn.Parameter(torch.randn(16, 8))

    def forward(self, h: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
        return h + self.table[ids]


def test_the_batchs_ids_passed_on_count_on_the_later_stage() -> None:
    """Only stage 0's input is the batch the step holds anyway: a later stage's copy of the ids
    arrives as a message on its own rank and is held there as any activation. Its count must be
    what the stage holds when fed the same values from elsewhere (input, ids, output: 128 + 32 + 128)."""
    torch.manual_seed(0)
    first, second = _PassesIds(), _LooksUp()
    x, ids = torch.randn(4, 8), torch.arange(4)
    chained = stage_bytes([first, second], (x, ids))[1]
    alone = stage_bytes([second], (torch.randn(4, 8), torch.arange(4)), first=False)[0]
    assert chained == alone
    assert alone.forward == 4 * 8 * 4 + 4 * 8 + 4 * 8 * 4


def test_a_first_stage_working_in_place_counts_the_copy_the_runner_gives_it() -> None:
    """ReLU(inplace=True) on the batch: the runner copies every later microbatch's input, and Linear
    keeps that copy for W; it was skipped as the batch (8,192 bytes counted where the runner held
    12,288), so caps from a budget let a rank pass it. Counted as the same model without in-place."""
    torch.manual_seed(0)
    in_place = nn.Sequential(nn.ReLU(inplace=True), nn.Linear(64, 64))
    plain = nn.Sequential(nn.ReLU(), nn.Linear(64, 64))
    plain.load_state_dict(in_place.state_dict())
    x = torch.randn(16, 64)
    assert stage_bytes([in_place], x.clone()) == stage_bytes([plain], x.clone())
    assert stage_bytes([in_place], x.clone())[0].forward >= x.nbytes  # the copy, kept


class _Twice(nn.Module):
    """A stage that hands on one tensor twice and a gate broadcast over the batch: views of two
    storages of which the next rank receives three dense buffers."""

    def __init__(self) -> None:
        super().__init__()
        self.lin, self.gate = nn.Linear(8, 8), nn.Parameter(torch.randn(1, 8))

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        h = self.lin(x)
        return h, h, torch.sigmoid(self.gate).expand(len(x), 8)


class _Keeps(nn.Module):
    """A later stage whose backward keeps each of its three inputs (a product saves its factors)."""

    def forward(self, a: torch.Tensor, b: torch.Tensor, g: torch.Tensor) -> torch.Tensor:
        return a * b * g


def test_aliased_and_broadcast_outputs_count_as_the_buffers_the_next_rank_receives() -> None:
    """A rank receives every boundary tensor in a buffer of its own: counted at the sender's storages,
    the later stage's one 4x8 float output handed on twice and its 1x8 gate expanded to 4x8 came to
    less than the runner held, and a profile's caps let a rank pass its byte budget (a tester's
    repro). Within a rank (a V's turn) the outputs are handed on as they are, and counted so."""
    torch.manual_seed(0)
    x = torch.randn(4, 8)
    crossing = stage_bytes([_Twice(), _Keeps()], x)[1]
    alone = stage_bytes([_Keeps()], tuple(torch.randn(4, 8) for _ in range(3)), first=False)[0]
    assert crossing == alone
    within = stage_bytes([_Twice(), _Keeps()], x, crossings=[False])[1]
    assert within.forward < crossing.forward
