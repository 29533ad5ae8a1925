"""Bytes of activation one microbatch holds on each stage: schedc's memory model, in bytes.

schedc counts activation memory in units of one microbatch's activations through all of a rank's
layers: an F allocates 1/v of a unit, an I frees (1 - w_mem)/v and W the remaining w_mem/v (an
unsplit B all of it). ``stage_bytes`` measures, per stage, what the runner really holds:

- after F: the tensors autograd saved, the stage's outputs and its inputs that need a gradient
  (the runner keeps both until I), each storage once;
- after I (split plans): what W still needs (``split_backward``). Where the weights join the
  inputs' path, I runs autograd with ``retain_graph=True`` and then frees what the nodes W does
  not run again saved: what the joins and the weights' branches saved stays until W, with the
  gradients recorded at the joins. Where there is nothing to split (a first stage fed token ids,
  a weight off the inputs' path), W runs the whole weight backward later: the whole graph, the
  outputs and their gradients stay. A stage without weights keeps nothing.

Weights and buffers are not activations, nor is what the step holds whole anyway (the batch's
inputs and targets), nor a leaf that needs a gradient but is no input (a loss's own weight).

``unit_bytes`` and ``measured_w_mem`` turn these into the model's terms conservatively: a rank's
unit is v times the most one of its stages holds (after F or after I), and w_mem the largest share
any stage still holds after I, so a schedule within caps in these units never holds more bytes
than the caps say. ``caps_for_budget``
turns a byte budget per rank into caps.
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction

import torch
from torch import nn

from schedc.errors import ProblemError
from schedc.problem import Problem

from .handlers import stage_input
from .saved_box import SavedBox, cached_weight_cast, unpack
from .shapes import as_tensors
from .split_backward import backward_input, backward_weight

W_MEM_STEP = Fraction(1, 8)
"""A measured w_mem is rounded up to a multiple of this: a fine grid multiplies CP-SAT's memory
scale, and rounding up keeps the model conservative."""


@dataclass(frozen=True)
class StageBytes:
    """Bytes one microbatch holds on a stage after its F, and after its I (what W still needs)."""

    forward: int
    after_input: int


def stage_bytes(stages: Sequence[nn.Module], example: object, loss_fn: Callable | None = None,
                target: object = None, first: bool = True, split: bool = True,
                crossings: Sequence[bool] | None = None) -> list[StageBytes]:
    """Per stage (layer order), the bytes one microbatch holds there after F and after I. ``first``:
    stages[0] is the model's first stage (its input is the batch, held by the step anyway);
    ``split``: I and W apart (else B frees everything at once). Like ``time_stages``, it runs the
    stages' forward and backward: their parameters' gradients are cleared afterwards, running
    statistics move and random numbers are drawn. ``crossings``: whether each boundary crosses
    ranks (None: every one does), where the next stage gets the outputs as messages (``_received``)."""
    value, out = example, []
    for k, stage in enumerate(stages):
        last = k == len(stages) - 1 and loss_fn is not None
        skip = storages(*stage.parameters(), *stage.buffers(), target)
        loss = (lambda o: loss_fn(o, target)) if last else None
        raw = as_tensors(value, "an input")
        if first and k == 0:
            counted, value = _model_input_stage(stage, raw, loss, skip, split)
        else:
            counted, value = _measure(stage, tuple(stage_input(t, False) for t in raw), loss, skip, split)
        if value is not None and k < len(stages) - 1 and (crossings is None or crossings[k]):
            value = _received(value)
        out.append(counted)
    for stage in stages:
        stage.zero_grad(set_to_none=True)
    return out


def _received(outputs: tuple[torch.Tensor, ...]) -> tuple[torch.Tensor, ...]:
    """The outputs as the next rank receives them: each in a dense buffer of its own
    (``Mailbox.post_recv``). Passed on as they are, a broadcast output (a mask made with
    ``expand``) counted at its one row, and one returned twice once: a profile's caps let a rank
    pass its byte budget by 5% (a tester's gate of 32 floats expanded over 256 rows)."""
    return tuple(torch.empty(o.shape, dtype=o.dtype, device=o.device).copy_(o) for o in outputs)


def _model_input_stage(stage: nn.Module, raw: tuple[torch.Tensor, ...], loss: Callable | None,
                       skip: set[int], split: bool) -> tuple[StageBytes, object]:
    """The model's first stage: its input is the batch, held by the step anyway, unless the stage
    works on it in place (``ReLU(inplace=True)``): the runner then gives every later microbatch a
    copy (``handlers._model_inputs``), which the stage keeps; uncounted, a rank held 4,096 bytes
    more than its caps allowed."""
    inputs = tuple(stage_input(t, True) for t in raw)
    versions = [t._version for t in inputs]
    counted, value = _measure(stage, inputs, loss, skip | storages(*raw), split)
    if versions == [t._version for t in inputs]:
        return counted, value
    return _measure(stage, tuple(stage_input(t.clone(), True) for t in raw), loss, skip, split)


def _measure(stage: nn.Module, inputs: tuple[torch.Tensor, ...], loss: Callable | None, skip: set[int],
             split: bool) -> tuple[StageBytes, object]:
    """One stage's F (and I, W), counting the storages alive after F and after I."""
    saved: list[weakref.ref] = []
    with torch.autograd.graph.saved_tensors_hooks(packer(saved, inputs), unpack):
        result = stage(*inputs)
        # the loss as the runner keeps it, scaled into a tensor of its own: mse_loss's 0-d result
        # shares its whole elementwise buffer on CPU, which counted the last stage 1.5 times
        outputs = (loss(result) * 1.0,) if loss is not None else as_tensors(result, "an output")
    kept_inputs = tuple(t for t in inputs if t.requires_grad)
    forward = count_bytes(skip, alive(saved), outputs, kept_inputs)
    following = None if loss is not None else tuple(o.detach() for o in outputs)
    if not split:
        return StageBytes(forward, forward), following
    work = _input_grad(outputs, kept_inputs, stage, loss is not None)
    del result, outputs, inputs, kept_inputs  # what I drops: only W's part of the graph stays
    after = count_bytes(skip, alive(saved), work.held())
    backward_weight(work)
    return StageBytes(forward, after), following


def packer(saved: list[weakref.ref], inputs: tuple[torch.Tensor, ...]) -> Callable[[torch.Tensor], object]:
    """The pack hook: each saved tensor in a box whose life autograd decides, except weights
    (a leaf that needs a gradient and is no input of the stage, or a view of one; a leaf made inside
    the forward with requires_grad would be taken for one too)."""
    own = {id(t) for t in inputs}

    def pack(t: torch.Tensor) -> object:
        base = t if t._base is None else t._base
        if (base.is_leaf and base.requires_grad and id(base) not in own) or cached_weight_cast(t):
            return t  # autocast's cached copy of a weight is a weight's too (``profile --autocast``)
        box = SavedBox(t)
        saved.append(weakref.ref(box))
        return box
    return pack


def _input_grad(outputs: tuple[torch.Tensor, ...], inputs: tuple[torch.Tensor, ...], stage: nn.Module,
                loss: bool) -> object:
    """I as the runner runs it: the loss from a gradient of one, other outputs from gradients of ones."""
    wanted = [o for o in outputs if o.requires_grad]
    grads = [None] if loss else [torch.ones_like(o) for o in wanted]
    params = [p for p in stage.parameters() if p.requires_grad]
    return backward_input(wanted, grads, inputs, params)[1]


def alive(saved: list[weakref.ref]) -> list[torch.Tensor]:
    """The tensors of the boxes autograd still keeps."""
    return [box.tensor for ref in saved if (box := ref()) is not None and box.tensor is not None]


def storages(*values: object) -> set[int]:
    """Storage addresses of the tensors among ``values`` (tuples and lists searched one level)."""
    found = set()
    for value in values:
        for t in value if isinstance(value, tuple | list) else (value,):
            if isinstance(t, torch.Tensor):
                found.add(t.untyped_storage().data_ptr())
    return found


def count_bytes(skip: set[int], *groups: Sequence[torch.Tensor]) -> int:
    """Bytes of the distinct storages of these tensors, those in ``skip`` left out."""
    sizes = {}
    for group in groups:
        for t in group:
            storage = t.untyped_storage()
            if storage.data_ptr() not in skip:
                sizes[storage.data_ptr()] = storage.nbytes()
    return sum(sizes.values())


def unit_bytes(problem: Problem, measured: Sequence[StageBytes]) -> tuple[int, ...]:
    """Per rank, the bytes of one unit of its cap: v times its largest stage (the model gives every
    stage of a rank the same 1/v, so the largest decides what a cap may hold)."""
    return tuple(problem.v * max(max(measured[s].forward, measured[s].after_input)
                                 for s in problem.rank_stages[r]) for r in range(problem.p))


def measured_w_mem(problem: Problem, measured: Sequence[StageBytes]) -> Fraction:
    """The least w_mem (a multiple of ``W_MEM_STEP``) that covers what every stage holds after I."""
    units = unit_bytes(problem, measured)
    share = max((Fraction(measured[s].after_input * problem.v, units[r])
                 for r in range(problem.p) for s in problem.rank_stages[r] if units[r]), default=Fraction(0))
    return min(Fraction(1), math.ceil(share / W_MEM_STEP) * W_MEM_STEP)


def caps_for_budget(problem: Problem, units: Sequence[int], budget: int) -> tuple[Fraction | None, ...]:
    """The caps that keep each rank within ``budget`` bytes, given its unit's bytes. A memory level
    is always a multiple of 1/(v * the denominator of w_mem) (F adds 1/v, I and W free their
    shares), so rounding each cap down to that grid loses no schedule. A cap is not clipped to m:
    the file is solved again with other m (``solve --problem F --m 16``), where a cap clipped to the
    profile's m bound where the budget did not (a 1 GiB budget written as 2 units, 17% slower). A
    rank that holds nothing has no cap."""
    grid = problem.v * problem.w_mem.denominator
    caps: list[Fraction | None] = []
    for r, unit in enumerate(units):
        if unit and budget < unit:
            raise ProblemError(f"an activation budget of {budget:,} bytes is below one unit of rank {r} "
                               f"({unit:,} bytes: one microbatch's activations there); the smallest budget "
                               f"that fits every rank is {max(units):,} bytes")
        caps.append(Fraction(math.floor(Fraction(budget, unit) * grid), grid) if unit else None)
    return tuple(caps)
