"""The box a saved tensor is packed into while schedc measures bytes: autograd keeps the box, schedc
keeps a weak reference to it, and I can empty it (``split_backward.release_saved``)."""

from __future__ import annotations

import torch

RELEASED = "schedc freed this saved tensor after its stage's I: no backward of that stage needs it again"
"""What unpacking a tensor freed after I says. Only a backward from outside the stage reaches one (a
loss that uses another stage's activations), which the runner then names (``handlers``)."""


class SavedBox:
    """What autograd keeps for a saved tensor while bytes are measured: a detached alias (a saved
    output kept with its own node would make a cycle that is never freed), weakly referenced from
    outside, and the tensor's version: hooks turn off autograd's own check for a tensor changed in
    place after it was saved, which would otherwise give wrong gradients silently."""

    __slots__ = ("__weakref__", "tensor", "version")

    def __init__(self, tensor: torch.Tensor) -> None:
        self.tensor: torch.Tensor | None = tensor.detach()
        self.version = tensor._version

    def release(self) -> None:
        """Drops the tensor: what only I needed, once I has run (``split_backward.release_saved``)."""
        self.tensor = None

    def unpack(self) -> torch.Tensor:
        if self.tensor is None:
            raise RuntimeError(RELEASED)
        if self.tensor._version != self.version:  # the alias shares the original's version counter
            raise RuntimeError("one of the variables needed for gradient computation has been modified by "
                               f"an inplace operation: a tensor of shape {tuple(self.tensor.shape)} is at "
                               f"version {self.tensor._version}; expected version {self.version} instead")
        return self.tensor


def unpack(packed: object) -> torch.Tensor:
    """The unpack hook for ``SavedBox`` (anything else was saved as it is)."""
    return packed.unpack() if isinstance(packed, SavedBox) else packed


def cached_weight_cast(tensor: torch.Tensor) -> bool:
    """Whether ``tensor`` (or the tensor it views: linear saves the transpose) is autocast's cast of
    a parameter, which autocast caches for the whole region: every microbatch's forward saves the
    same copy. Without the cache (``cache_enabled=False``) each forward casts anew, and its copy
    lives with that microbatch's activations, so it counts. (Whether autocast is on cannot be asked
    here: autograd packs with it switched off, so a model's own ``weight.to()`` is taken for one.)"""
    if not torch.is_autocast_cache_enabled():
        return False
    root = tensor._base if tensor._base is not None else tensor
    cast = root.grad_fn
    if cast is None or cast.name() != "ToCopyBackward0" or not cast.next_functions:
        return False
    return isinstance(getattr(cast.next_functions[0][0], "variable", None), torch.nn.Parameter)
