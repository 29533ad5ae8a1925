"""While ``record_memory`` measures bytes, autograd saves every tensor in a ``SavedBox``. The box must
hold a detached alias: an op that saves its own output (``exp``, ``tanh``) would otherwise make a
cycle, output -> its node -> the box -> the output, and the activation would never be freed once
the step drops it (the recorder would go on counting it, and the memory would leak step after step).
"""

from __future__ import annotations

import gc

import torch

from schedc.runtime.held_bytes import HeldBytes


def test_a_saved_output_is_freed_once_its_graph_is_dropped():
    recorder = HeldBytes([])
    x = torch.randn(16, requires_grad=True)
    gc.disable()  # freed by reference counting alone, as the runner relies on between actions
    try:
        with recorder.hooks():
            y = x.exp()  # saves its result
        (box,) = [ref() for ref in recorder._boxes]
        assert box.tensor.data_ptr() == y.data_ptr()  # an alias, no copy
        del box, y  # the step drops the graph without a backward (a step that fails before its backward)
        assert [ref() for ref in recorder._boxes] == [None]
    finally:
        gc.enable()
