# sed -i '30s/if self.tensor is None:/if False:/' runtime/saved_box.py
# sed -i '56s/torch.nn.Parameter)/torch.Tensor)/' runtime/saved_box.py
"""The saved-tensor box of ``record_memory`` (runtime/saved_box.py): a released box says so in the words
the runner translates into one line, and only a Parameter's cast is taken for autocast's cached
weight copy (one per step, not counted with a microbatch's activations)."""

from __future__ import annotations

import pytest
import torch

from schedc.runtime.saved_box import RELEASED, SavedBox, cached_weight_cast, unpack


def test_a_released_saved_tensor_says_it_was_freed() -> None:
    """A backward from outside the stage reaching a tensor freed after I: the runner names it by
    RELEASED (``handlers``); without the check, unpacking read ``None._version``, an AttributeError
    traceback the runner could not name."""
    boxes: list[SavedBox] = []

    def pack(tensor: torch.Tensor) -> SavedBox:
        boxes.append(SavedBox(tensor))
        return boxes[-1]

    x = torch.randn(8, requires_grad=True)
    with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
        y = x.exp()  # saves its result in a box
    (box,) = boxes
    box.release()
    with pytest.raises(RuntimeError, match=RELEASED):
        y.sum().backward()


def test_only_a_parameter_s_cast_is_taken_for_the_cached_weight_copy() -> None:
    """Autocast's cache keeps one cast per weight for the whole region, so a weight's cast is not a
    microbatch's activation; a cast of any other leaf (a later stage's received input, which needs
    a gradient) is made anew each microbatch and must be counted."""
    weight = torch.nn.Parameter(torch.randn(4, 4))
    received = torch.randn(4, 4, requires_grad=True)
    assert torch.is_autocast_cache_enabled()
    assert cached_weight_cast(weight.to(torch.bfloat16))
    assert cached_weight_cast(weight.to(torch.bfloat16).t())  # linear saves the transpose: a view
    assert not cached_weight_cast(received.to(torch.bfloat16))
    assert not cached_weight_cast(received.to(torch.bfloat16).t())
