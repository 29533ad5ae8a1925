"""The first step's forward that finds a stage's output shapes and dtypes (``output_metas``), before
any data exists, so that receives can be posted ahead of their data (``shapes.infer_boundaries``).

It must leave no trace, since the step then runs the stage for real:
- it runs on the meta device, with the weights and buffers swapped for meta copies: no compute, and
  nothing real is written (a buffer updated in forward, an embedding's max_norm renormalising its
  rows), and attributes the forward sets (a cached rotary table or mask) are put back, so the real
  forward does not meet a meta tensor there;
- under autocast, or for a stage the meta device cannot run (data-dependent control flow, tensors
  made on a real device), it runs on zeros instead, with the buffers and the weights an embedding's
  max_norm rewrites swapped for clones (meta tensors are not autocast-eligible, so their dtypes
  would be the weights', not the step's).

Either runs in the module's current mode, as the step will, with the random state restored, and
with autograd on and inputs that need a gradient as the real forward's do (``handlers.stage_input``):
a stage that registers a hook on an activation or retains its gradient fails without a graph.
Forward hooks fire, as in torch's own shape inference (a forward on empty tensors).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch
from torch import nn

from .errors import PlanMismatchError
from .shapes import Metas, differentiable, in_place_error, metas_of, modifies_input

META = torch.device("meta")


def output_metas(module: nn.Module, metas: Metas, device: torch.device, stage: int = 0) -> Metas:
    """Shapes and dtypes of ``module(*inputs)`` for inputs described by ``metas`` (module doc)."""
    if not _autocast_on():
        swapped = {name: t.to(META) for name, t in (*module.named_parameters(), *module.named_buffers())}
        try:
            with _attributes_kept(module):
                return metas_of(_forward(module, metas, META, stage, swapped), f"the output of stage {stage}")
        except PlanMismatchError:
            raise
        except Exception as err:  # anything the meta device cannot run: the real forward decides
            if modifies_input(err):
                raise in_place_error(stage) from None
    try:
        out = _forward(module, metas, device, stage, _clones(module))
    except Exception as err:  # the stage's own error, named with the input it got (chained, not lost)
        if modifies_input(err):
            raise in_place_error(stage) from None
        got = ", ".join(f"{tuple(m.shape)} {m.dtype}" for m in metas)
        first = (str(err).strip().splitlines() or [""])[0][:300]
        raise PlanMismatchError(f"stage {stage} fails on a microbatch input of {got} "
                                f"({type(err).__name__}: {first})") from err
    return metas_of(out, f"the output of stage {stage}")


def _autocast_on() -> bool:
    return any(torch.is_autocast_enabled(kind) for kind in ("cpu", "cuda"))


def _clones(module: nn.Module) -> dict[str, torch.Tensor]:
    """What a forward on real zeros may write to: the buffers, and the weight of an embedding that
    renormalises the rows it looks up (``max_norm``), which would otherwise change row 0."""
    clones = {name: t.clone() for name, t in module.named_buffers()}
    for name, sub in module.named_modules():
        if isinstance(sub, nn.Embedding | nn.EmbeddingBag) and sub.max_norm is not None:
            clones[f"{name}.weight" if name else "weight"] = sub.weight.detach().clone()
    return clones


@contextlib.contextmanager
def _attributes_kept(module: nn.Module) -> Iterator[None]:
    """Puts back every submodule's attributes as they were (a cache the forward filled with a meta
    tensor); what it appends to a list it holds stays (``handlers.checked_loss`` names that case)."""
    saved = [(sub, dict(sub.__dict__)) for sub in module.modules()]
    try:
        yield
    finally:
        for sub, attributes in saved:
            sub.__dict__.clear()
            sub.__dict__.update(attributes)


def _forward(module: nn.Module, metas: Metas, device: torch.device, stage: int,
             swapped: dict[str, torch.Tensor]) -> object:
    """The stage on zeros (or empty meta tensors) on ``device``, its state swapped for ``swapped``."""
    inputs = [torch.zeros(m.shape, dtype=m.dtype, device=device) for m in metas]
    inputs = [x.requires_grad_(stage > 0 and differentiable(x.dtype)) for x in inputs]
    cuda = [device] if device.type == "cuda" else []
    with torch.enable_grad(), torch.random.fork_rng(devices=cuda):
        return torch.func.functional_call(module, swapped, tuple(inputs), strict=False)
