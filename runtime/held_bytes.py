"""The bytes of activation a rank holds after each action of a step: the measured counterpart of
the simulator's memory curve (``PipelineRunner(record_memory=True)``).

What counts is what the step keeps for later: the tensors autograd still saves (seen through weak
references on pack-hook holders), every (stage, microbatch)'s kept inputs, outputs and W state,
the losses, and the messages waiting in the mailbox; each storage once. Weights, buffers and the
batch's inputs and targets do not count: they stay whatever the plan. Transient memory inside an
action (temporaries of one layer) is not seen; the plan's levels are those between actions too.
"""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Iterable, Iterator

import torch

from .handlers import StepContext


class _Box:
    """What autograd keeps for a saved tensor while recording: a detached alias (a saved output
    kept with its own node would make a cycle that is never freed)."""

    __slots__ = ("__weakref__", "tensor")

    def __init__(self, tensor: torch.Tensor) -> None:
        self.tensor = tensor


class HeldBytes:
    """Records, for one step, the bytes held after each action."""

    def __init__(self, fixed: Iterable[torch.Tensor]) -> None:
        self._fixed = {t.untyped_storage().data_ptr() for t in fixed}
        self._boxes: list[weakref.ref] = []

    @contextlib.contextmanager
    def hooks(self) -> Iterator[None]:
        """Routes the forwards' saved tensors through weakly referenced boxes."""
        with torch.autograd.graph.saved_tensors_hooks(self._pack, _unpack):
            yield

    def _pack(self, tensor: torch.Tensor) -> _Box:
        box = _Box(tensor.detach())
        self._boxes.append(weakref.ref(box))
        return box

    def measure(self, ctx: StepContext) -> int:
        """Bytes the step holds now (the module doc)."""
        alive = [box.tensor for ref in self._boxes if (box := ref()) is not None]
        self._boxes = [ref for ref in self._boxes if ref() is not None]
        kept = [t for saved in ctx.saved.values() for t in (*saved.inputs, *saved.outputs)]
        kept += [t for saved in ctx.saved.values() if saved.weight_work for t in saved.weight_work.held()]
        waiting = [t for value in ctx.mailbox.ready.values() for t in value]
        sizes = {t.untyped_storage().data_ptr(): t.untyped_storage().nbytes()
                 for t in (*alive, *kept, *ctx.losses, *waiting)}
        return sum(size for ptr, size in sizes.items() if ptr not in self._fixed)


def _unpack(box: _Box) -> torch.Tensor:
    return box.tensor


def tensors_in(value: object) -> list[torch.Tensor]:
    """The tensors in a batch's microbatches (tensors, tuples or lists of them; other targets none)."""
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, tuple | list):
        return [t for item in value for t in tensors_in(item)]
    return []
