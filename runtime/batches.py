"""Cutting a step's batch into the plan's m microbatches, and the checks that make a batch that
does not cut one clear line on every rank given it (``PipelineRunner.step``)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping

import torch

from .errors import PlanMismatchError
from .shapes import Metas, metas_of


def split_batch(batch: object, m: int, rank: int, what: str) -> list[object]:
    """The batch cut into m microbatches: a tensor or a list (of samples) along its first
    dimension; a tuple (or an input list) entry by entry, each microbatch a tuple."""
    if batch is None:
        raise PlanMismatchError(f"rank {rank} holds the {'first' if what == 'input' else 'last'} "
                                f"stage: step() needs the {what}")
    if _entries(batch, what):  # several tensors: each cut, each microbatch a tuple
        if not batch:
            raise PlanMismatchError(f"rank {rank}: the {what} is an empty {type(batch).__name__}")
        for t in batch:  # each entry is cut: a float or None among them has no batch dimension
            _check_splittable(t, rank, what)
        if len({len(t) for t in batch}) > 1:
            raise PlanMismatchError(f"rank {rank}: the {what}'s entries have batches of "
                                    f"{[len(t) for t in batch]}; they must be equal")
        return list(zip(*(split_batch(t, m, rank, what) for t in batch), strict=True))
    _check_splittable(batch, rank, what)
    size = len(batch)
    if size % m or not size:
        raise PlanMismatchError(f"rank {rank}: the {what} batch of {size} does not split into the "
                                f"plan's m = {m} equal, non-empty microbatches")
    return list(batch.split(size // m)) if isinstance(batch, torch.Tensor) else [
        batch[k:k + size // m] for k in range(0, size, size // m)]


def cut_batch(x: object, target: object, m: int, rank: int, needs_input: bool, needs_target: bool,
              alike: tuple[bool, bool] = (False, False)) -> tuple[list | None, list | None, Metas | None]:
    """The batch's checks, which every rank given it repeats alike, its microbatches where this rank
    needs them or was given them, and the first input microbatch's shapes. ``alike``: whether every
    rank refuses a bad input, and a bad target, as this one does (``refused_alike``); its refusal
    then carries ``alike = True``, and the runner stays usable."""
    with _refused(alike[0] and alike[1]):
        check_batch_sizes(x, target, m, rank)
    with _refused(alike[0]):
        inputs = split_batch(x, m, rank, "input") if needs_input or x is not None else None
        first = metas_of(inputs[0], f"rank {rank}: the input of stage 0") if inputs is not None else None
    with _refused(alike[1]):
        targets = split_batch(target, m, rank, "target") if needs_target or target is not None else None
    return inputs, targets, first


def refused_alike(call: str, everywhere: tuple[bool, bool], given: tuple[int | None, int | None]
                  ) -> tuple[bool, bool]:
    """Whether every rank refuses a bad input, and a bad target, as this one does, so that none is
    left inside the call (docs/training.md asks for the same batch on every rank given one), from whether
    every rank's first call was given the input, and the target (``everywhere``), and what this
    rank is given now (``given``: their sizes, None where not given). A step: only where every
    rank was given both then and this rank both now, as a torch-style step (x on the first rank,
    the target on the last) never has; an eval, which takes no target, the input's alone where
    every rank was given it then and this rank now, so that an odd last validation batch leaves
    the runner usable (a first rank given x in torch style takes its peers to have it too)."""
    if call != "eval":  # a step, scaled or not
        both = all(everywhere) and None not in given
        return both, both
    return everywhere[0] and given[0] is not None, all(everywhere) and None not in given


@contextlib.contextmanager
def _refused(alike: bool) -> Iterator[None]:
    """Marks a refusal inside as one that every rank makes alike, or not."""
    try:
        yield
    except PlanMismatchError as err:
        err.alike = alike
        raise


def check_batch_sizes(x: object, target: object, m: int, rank: int) -> None:
    """Where a rank is given both, their batches must match: a target of another size would be
    split into microbatches of another size, which a loss such as MSE broadcasts silently."""
    first = x[0] if isinstance(x, tuple | list) and x else x
    target = target[0] if _entries(target, "target") and target else target
    if isinstance(first, torch.Tensor) and first.dim() > 0 and _samples(target) and len(target) != len(first):
        hint = (f" (a {type(x).__name__} of {m} tensors reads as {m} inputs of stage 0, each a whole "
                f"batch: pass the batch itself, which step() cuts into m = {m} microbatches)"
                if isinstance(x, tuple | list) and len(x) == m > 1 else "")
        if not hint and 0 < len(first) < len(target) and len(target) % len(first) == 0:
            hint = (f" (a target flattened to {len(first)} samples x {len(target) // len(first)}: keep a "
                    "dimension per sample and flatten in loss_fn, or give the target without the input, "
                    "on the last stage's rank only)")
        raise PlanMismatchError(f"rank {rank}: the target batch of {len(target)} does not match "
                                f"the input batch of {len(first)}{hint}")


def batch_sizes(x: object, target: object) -> tuple[int | None, int | None]:
    """The numbers of samples in the input and the target a rank was given, for the first call's
    comparison across ranks (inputs with inputs, targets with targets: a flattened target of B*T
    tokens on a rank given no input is legal); None where one has no length (not given, or not a
    batch: its own check says so)."""
    sizes = []
    for batch, what in ((x, "input"), (target, "target")):
        first = batch[0] if _entries(batch, what) and batch else batch
        sizes.append(len(first) if first is not None and _samples(first) else None)
    return sizes[0], sizes[1]


def _check_splittable(batch: object, rank: int, what: str) -> None:
    """A tensor of at least one dimension (not one that needs a gradient: the model's input gets
    none here), or a list of samples; anything else has no batch dimension to cut."""
    if isinstance(batch, torch.Tensor):
        if batch.dim() == 0:
            raise PlanMismatchError(f"rank {rank}: the {what} is a 0-d tensor; it needs a batch "
                                    "dimension to cut into microbatches")
        if batch.requires_grad:  # its graph would be freed after the first microbatch's backward
            raise PlanMismatchError(f"rank {rank}: the {what} requires grad, but the runner gives "
                                    f"the {what} no gradient: pass it detached (e.g. a teacher's output "
                                    "computed under torch.no_grad())")
    elif what == "input" or isinstance(batch, str | bytes | Mapping) \
            or not (hasattr(batch, "__getitem__") and hasattr(batch, "__len__")):
        raise PlanMismatchError(f"rank {rank}: the {what} must be a tensor or a tuple of tensors"
                                f"{' (or a sequence of samples)' if what == 'target' else ''}, got "
                                f"{type(batch).__name__}")


def _entries(batch: object, what: str) -> bool:
    """Whether the batch is several tensors cut one by one: a tuple (or an input list) of tensors,
    arrays or lists; a target tuple of anything else (labels) is a sequence of samples."""
    if what == "input":
        return isinstance(batch, tuple | list)
    return isinstance(batch, tuple) and all(isinstance(t, torch.Tensor | list) or _is_array(t) for t in batch)


def _is_array(value: object) -> bool:
    """A numpy (or other array-API) array of at least one dimension; a per-sample tuple is no entry."""
    return not isinstance(value, tuple) and getattr(value, "ndim", 0) >= 1 and hasattr(value, "__len__")


def _samples(value: object) -> bool:
    """A sequence of samples with a length to check and cut: a tensor or array of at least one
    dimension, a list, or any other sized sequence that is not text or a mapping."""
    if isinstance(value, str | bytes | Mapping) or getattr(value, "ndim", 1) == 0:
        return False
    return isinstance(value, list) or (hasattr(value, "__getitem__") and hasattr(value, "__len__"))
