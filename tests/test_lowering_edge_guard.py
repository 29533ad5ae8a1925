"""``edge_tensor`` refuses a gradient edge that skips a stage, as it refuses such an activation
edge (runtime/lowering.py): a dependency rule gone wrong must fail at lowering, not send the
gradient of stage 2 to a rank that computes stage 0 and have it consumed as stage 1's."""

from __future__ import annotations

import pytest

from schedc.actions import Action
from schedc.runtime.lowering import TensorKey, edge_tensor


@pytest.mark.parametrize("before, after", [("2I0", "0I0"), ("3B1", "1B1"), ("0I0", "1I0")])
def test_a_gradient_edge_must_go_one_stage_back(before, after):
    with pytest.raises(ValueError, match="no tensor is defined for the dependency"):
        edge_tensor(Action.parse(before), Action.parse(after))


def test_one_stage_back_is_the_gradient_of_the_senders_input():
    assert edge_tensor(Action.parse("2B1"), Action.parse("1B1")) == TensorKey("grad", 2, 1)
