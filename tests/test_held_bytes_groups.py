# sed -i '52s/(\*saved.inputs, \*saved.outputs)/(*saved.outputs,)/' runtime/held_bytes.py
# sed -i '56s/, \*(flight for _, flight in mail.sending)\]/]/' runtime/held_bytes.py
# sed -i '93s/for t in tensors_in(item)\]/for t in [item]]/' runtime/held_bytes.py
# sed -i '70s/storage.nbytes()/t.nbytes/' runtime/held_bytes.py
"""``HeldBytes.measure`` on a step's state built by hand: every kind of tensor the module doc names
lands in its group (activations: saved tensors, kept inputs, outputs and W state; other: messages
ready, posted receives, sends in flight, losses), each storage once and in the first group that
has it, whole storages (a view keeps all of its buffer), weights in neither. The runner's own tests
see these mixed together, where a tensor held twice (a sent activation is also its stage's kept
output) hides a group left out."""

from __future__ import annotations

from types import SimpleNamespace

import torch

from schedc.runtime.held_bytes import HeldBytes, tensors_in


def _floats(n: int) -> torch.Tensor:
    return torch.zeros(n)  # 4 n bytes, a storage of its own


def test_each_group_counts_once_in_its_own_figure() -> None:
    """Sizes are distinct powers of two times 4 bytes, so each total names exactly what it counted."""
    weight = _floats(1 << 12)
    recorder = HeldBytes([weight])
    x = torch.randn(1 << 0, requires_grad=True)
    with recorder.hooks():
        _kept_alive = x.exp()  # exp saves its result: a box the recorder sees (kept until measured)
    kept_input, kept_output, w_state = _floats(1 << 1), _floats(1 << 2), _floats(1 << 3)
    ready, posted, sending, loss = _floats(1 << 4), _floats(1 << 5), _floats(1 << 6), _floats(1 << 7)
    saved = {
        (0, 0): SimpleNamespace(inputs=(kept_input,), outputs=(kept_output,), weight_work=None),
        (1, 0): SimpleNamespace(inputs=(), outputs=(), weight_work=SimpleNamespace(held=lambda: [w_state])),
    }
    mailbox = SimpleNamespace(
        ready={"a": [ready[:1], kept_output[:2]]},  # a view keeps its whole storage; a kept output counts
        # once, as an activation
        receiving={"b": SimpleNamespace(tensors=(posted,))},
        sending=[("c", SimpleNamespace(tensors=(sending, weight)))],  # a weight sent: in neither
    )
    ctx = SimpleNamespace(saved=saved, mailbox=mailbox, losses={0: loss})
    activations, other = recorder.measure(ctx)
    assert activations == 4 * ((1 << 0) + (1 << 1) + (1 << 2) + (1 << 3))
    assert other == 4 * ((1 << 4) + (1 << 5) + (1 << 6) + (1 << 7))
    assert recorder.measure(ctx) == (activations, other)  # measuring again changes nothing


def test_the_batchs_tensors_are_found_inside_nested_microbatches() -> None:
    """A batch of microbatches that are tuples (or lists) of tensors, with a target that is no
    tensor at all: every tensor is found (the batch counts as neither figure), and nothing else is
    taken for one (a non-tensor in the fixed set has no storage to ask for)."""
    a, b, c = _floats(1), _floats(2), _floats(3)
    found = tensors_in([(a, b), [c], "label", 3])
    assert [id(t) for t in found] == [id(a), id(b), id(c)]
    assert tensors_in(a) == [a] and tensors_in(None) == [] and tensors_in(7) == []
