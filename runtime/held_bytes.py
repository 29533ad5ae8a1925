"""The bytes a rank holds after each action of a step: the measured counterpart of the simulator's
memory curve (``PipelineRunner(record_memory=True)``).

Activations, which the plan's caps govern: the tensors autograd still saves (seen through weak
references on pack-hook boxes) and every (stage, microbatch)'s kept inputs, outputs and W state.
Besides them, which no cap counts: messages (received and waiting for their action, posted receive
buffers, sends not yet freed: on gloo, until a message from the peer proves them delivered,
``Mailbox._release_delivered``) and the step's losses. Each storage once, in the first group that has
it. Weights, buffers and the batch's inputs and targets count in neither: they stay whatever the
plan. Temporaries inside an action are not seen; the plan's levels are those between actions too.
Under autocast the low-precision copies of the weights, cast once and cached for the step, count
with the weights (``saved_box.cached_weight_cast``).
"""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Iterable, Iterator

import torch
from torch import nn

from .handlers import StepContext
from .saved_box import SavedBox, cached_weight_cast, unpack


class HeldBytes:
    """Records, for one step, the bytes held after each action."""

    def __init__(self, fixed: Iterable[torch.Tensor]) -> None:
        self._fixed = {t.untyped_storage().data_ptr() for t in fixed}
        self._boxes: list[weakref.ref] = []

    @contextlib.contextmanager
    def hooks(self) -> Iterator[None]:
        """Routes the forwards' saved tensors through weakly referenced boxes."""
        with torch.autograd.graph.saved_tensors_hooks(self._pack, unpack):
            yield

    def _pack(self, tensor: torch.Tensor) -> SavedBox:
        if cached_weight_cast(tensor):  # one per weight and step, whatever the plan: a weight's kind
            self._fixed.add(tensor.untyped_storage().data_ptr())
        box = SavedBox(tensor)
        self._boxes.append(weakref.ref(box))
        return box

    def measure(self, ctx: StepContext) -> tuple[int, int]:
        """(activation bytes, other bytes) the step holds now (the module doc)."""
        self._boxes = [ref for ref in self._boxes if ref() is not None]
        alive = [box.tensor for ref in self._boxes if (box := ref()) is not None and box.tensor is not None]
        kept = [t for saved in ctx.saved.values() for t in (*saved.inputs, *saved.outputs)]
        kept += [t for saved in ctx.saved.values() if saved.weight_work for t in saved.weight_work.held()]
        mail = ctx.mailbox
        messages = [t for value in mail.ready.values() for t in value]
        flights = [*mail.receiving.values(), *(flight for _, flight in mail.sending)]
        messages += [t for flight in flights for t in flight.tensors]
        counted = set(self._fixed)
        activations = _bytes([*alive, *kept], counted)
        return activations, _bytes([*messages, *ctx.losses.values()], counted)


def _bytes(tensors: list[torch.Tensor], counted: set[int]) -> int:
    """Bytes of the storages of ``tensors`` not in ``counted``, which then holds them too."""
    total = 0
    for t in tensors:
        storage = t.untyped_storage()
        if storage.data_ptr() not in counted:
            counted.add(storage.data_ptr())
            total += storage.nbytes()
    return total


@contextlib.contextmanager
def recording(enabled: bool, modules: list[nn.Module], inputs: object,
              targets: object) -> Iterator[HeldBytes | None]:
    """With ``record_memory``, a step's forwards save through ``HeldBytes``; the modules' weights
    and buffers (a loss module's too) and the batch do not count."""
    if not enabled:
        yield None
        return
    held = HeldBytes([*(t for s in modules for t in (*s.parameters(), *s.buffers())),
                      *tensors_in(inputs), *tensors_in(targets)])
    with held.hooks():
        yield held


def tensors_in(value: object) -> list[torch.Tensor]:
    """The tensors in a batch's microbatches (tensors, tuples or lists of them; other targets none)."""
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, tuple | list):
        return [t for item in value for t in tensors_in(item)]
    return []
