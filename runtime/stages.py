"""Cutting a model into a plan's stages, and checking that modules and group fit a plan.

The checks run before any communication so that a wrong plan, world size or stage set fails on
the spot with a message that says what does not fit, instead of hanging in a receive.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Mapping, Sequence

import torch
from torch import nn

from schedc.errors import ArgumentError, counted, shown
from schedc.problem import Problem

from .dp_buckets import text_digest
from .errors import PlanMismatchError
from .shared_weights import StageModules, across_ranks, outside_weights, shared_across_ranks


def stage_bounds(num_layers: int, num_stages: int) -> list[tuple[int, int]]:
    """Contiguous, as-even-as-possible layer ranges [start, end) for each stage."""
    if _index(num_layers) is None or _index(num_stages) is None or num_stages < 1:
        raise ArgumentError(f"stage_bounds needs integer counts of layers and (>= 1) stages, got "
                            f"{shown(num_layers)} and {shown(num_stages)}")
    if num_layers < num_stages:
        raise PlanMismatchError(f"cannot cut {num_layers} layers into {num_stages} stages (p*v)")
    base, extra = divmod(num_layers, num_stages)
    bounds, start = [], 0
    for s in range(num_stages):
        end = start + base + (1 if s < extra else 0)
        bounds.append((start, end))
        start = end
    return bounds


class Chain(nn.Sequential):
    """An ``nn.Sequential`` whose layers may pass several tensors: a tuple output is unpacked into
    the next layer's arguments (the first layer takes the stage's inputs)."""

    def forward(self, *args: object) -> object:
        out: object = args[0] if len(args) == 1 else args
        for layer in self:
            out = layer(*args)
            args = out if isinstance(out, tuple) else (out,)
        return out


def split_stages(
    layers: nn.Sequential | Sequence[nn.Module], problem: Problem, rank: int,
    bounds: Sequence[tuple[int, int]] | None = None,
) -> dict[int, nn.Module]:
    """The stages ``rank`` holds, as {stage: ``Chain`` of its layers}, in the plan's placement.

    Layers are cut in order into p*v contiguous stages (as evenly as possible, or at ``bounds``);
    the returned modules share parameters with ``layers``. The dict also records the weights that
    stages on different ranks share in Python (``shared_weights.py``), which the runner then
    requires ``ties`` to declare.
    """
    layers = _layers(layers)
    bounds = _bounds(layers, problem, bounds)
    index = _index(rank)
    if index is None or not 0 <= index < problem.p:
        raise PlanMismatchError(f"rank {shown(rank)} is outside the plan's {problem.p} ranks")
    stages = StageModules((s, Chain(*layers[bounds[s][0]:bounds[s][1]])) for s in problem.rank_stages[index])
    stages.shared = shared_across_ranks(layers, bounds, problem)
    stages.across = across_ranks(layers, bounds, problem)
    stages.outside = outside_weights(layers, bounds, problem, index)
    stages.cut = cut_digest(layers, bounds)
    return stages


def cut_digest(layers: Sequence[nn.Module], bounds: Sequence[tuple[int, int]]) -> int:
    """The number of layers and the stage ranges, which every rank's first call compares: ranks
    given other bounds ran stages that fit together into another model, silently, where the shapes
    between them agree. Not the layers' kinds: a rank may stand placeholders in for layers it does
    not hold."""
    return text_digest(repr((len(layers), [tuple(b) for b in bounds])))


def _layers(layers: object) -> list[nn.Module]:
    """The layers in order: an nn.Sequential, an nn.ModuleList or any iterable of modules; not one
    module with its own forward, which cannot be cut."""
    is_model = isinstance(layers, nn.Module) and not isinstance(layers, nn.Sequential | nn.ModuleList)
    found = [] if is_model or isinstance(layers, str | Mapping) or not isinstance(layers, Iterable) \
        else list(layers)
    if not found or not all(isinstance(m, nn.Module) for m in found):
        raise ArgumentError("layers must be an nn.Sequential, an nn.ModuleList or a list of nn.Modules, cut "
                            "in order into stages (a model with its own forward cannot be cut), got "
                            f"{type(layers).__name__}")
    return found


def _index(value: object) -> int | None:
    """An integer (numpy's too), or None."""
    if isinstance(value, bool):
        return None
    try:
        return operator.index(value)
    except TypeError:
        return None


def _bounds(layers: list[nn.Module], problem: object, bounds: object) -> list[tuple[int, int]]:
    """The stages' layer ranges: given ones must cover every layer once, in order, none empty."""
    if not isinstance(problem, Problem):
        raise ArgumentError(f"split_stages needs the plan's Problem (plan.problem), "
                            f"got {type(problem).__name__}")
    if bounds is None:
        return stage_bounds(len(layers), problem.num_stages)
    return check_bounds(len(layers), problem.num_stages, bounds)


def check_bounds(count: int, num_stages: int, bounds: object) -> list[tuple[int, int]]:
    """Given layer ranges as pairs, if they cover ``count`` layers once, in order, in ``num_stages``
    non-empty stages (``split_stages``' and ``schedc profile --bounds``' check)."""
    pairs = isinstance(bounds, Sequence) and all(
        isinstance(b, Sequence) and len(b) == 2 and all(_index(i) is not None for i in b) for b in bounds)
    if not pairs:
        raise PlanMismatchError(f"stage bounds must be a list of (start, end) integer pairs, "
                                f"got {bounds!r:.80}")
    bounds = [(_index(lo), _index(hi)) for lo, hi in bounds]
    if len(bounds) != num_stages:
        raise PlanMismatchError(f"{counted(len(bounds), 'stage range')} given for the "
                                f"p*v = {num_stages} stages")
    ends = [0] + [hi for _, hi in bounds]
    if any(lo != ends[k] or hi <= lo for k, (lo, hi) in enumerate(bounds)) or ends[-1] != count:
        raise PlanMismatchError(f"stage bounds must cut the {count} layers in order into non-empty ranges "
                                f"[start, end), each starting where the last ended, from 0 to {count}; "
                                f"got {bounds}")
    return bounds


def stage_parameter(
    layers: nn.Sequential | Sequence[nn.Module], problem: Problem, param: torch.Tensor,
    bounds: Sequence[tuple[int, int]] | None = None,
) -> tuple[int, str]:
    """(stage, name in that stage's module) of a parameter of ``layers``, as ``split_stages`` cuts
    them: the form ``PipelineRunner(ties=...)`` takes, e.g. to tie an embedding to the output head.
    A Parameter that several stages hold (``head.weight = embedding.weight``) is refused: its tie
    is ``stage_parameters``' list, and either stage alone made a tie of one stage twice."""
    held = stage_parameters(layers, problem, param, bounds)
    if len(held) > 1:
        raise PlanMismatchError(f"the parameter is shared by stages {', '.join(str(s) for s, _ in held)}: "
                                "tie them with ties=[stage_parameters(layers, problem, param)]")
    return held[0]


def stage_parameters(
    layers: nn.Sequential | Sequence[nn.Module], problem: Problem, param: torch.Tensor,
    bounds: Sequence[tuple[int, int]] | None = None,
) -> list[tuple[int, str]]:
    """(stage, name) of each stage that holds ``param``, in stage order: for a weight shared in
    Python between layers of different stages, the tie that keeps its copies equal once the stages
    sit on different ranks (on one rank they stay one Parameter, and the tie counts it once)."""
    layers = _layers(layers)
    bounds = _bounds(layers, problem, bounds)
    held = []
    for s, (lo, hi) in enumerate(bounds):
        names = (f"{i - lo}.{name}" for i in range(lo, hi)
                 for name, p in layers[i].named_parameters() if p is param)
        first = next(names, None)
        if first is not None:
            held.append((s, first))
    if not held:
        raise PlanMismatchError("the parameter is not in any of the layers")
    return held


def fit_errors(
    problem: Problem, stages: Mapping[int, object], rank: int, world_size: int,
) -> list[str]:
    """Why this rank's modules and group do not fit the plan (empty when they do); the caller
    prefixes the rank."""
    if not isinstance(stages, Mapping):
        return [f"stages must be a {{stage index: module}} dict, as split_stages returns, "
                f"got {type(stages).__name__}"]
    errors = []
    if world_size != problem.p:
        errors.append(f"the plan has p = {problem.p} ranks but the process group has {world_size}")
    if not 0 <= rank < problem.p:
        return [*errors, f"it is outside the plan's {problem.p} ranks"]
    want, got = set(problem.rank_stages[rank]), set(stages)
    if got != want:
        errors.append(
            f"the plan puts stages {sorted(want)} on it ({problem.placement}, p={problem.p} v={problem.v}) "
            f"but it got modules for stages {sorted(got)}"
        )
    bad = [s for s, module in stages.items() if not isinstance(module, nn.Module)]
    if bad:
        errors.append(f"its stages {sorted(bad)} are not nn.Modules")
    ddp = nn.parallel.DistributedDataParallel
    wrapped = sorted(s for s, module in stages.items() if isinstance(module, nn.Module)
                     and any(isinstance(sub, ddp) for sub in module.modules()))
    if wrapped:  # DDP would reduce once per microbatch and expects one backward per forward
        errors.append(f"its stages {wrapped} are or hold modules wrapped in DistributedDataParallel: pass "
                      "the bare modules and dp_group= (the runner averages the gradients over it once per "
                      "step)")
    return errors
