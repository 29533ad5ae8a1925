"""Weights shared in Python between stages on different ranks (``head.weight = embedding.weight``,
as nanoGPT ties them): each rank's process holds its own copy, so without a tie their gradients are
never summed and the copies train apart without a word. ``split_stages`` sees every layer and
records such weights; the runner refuses one that no tie covers, on every rank alike (every rank
cut the same layers), and at each step one frozen at the split and unfrozen since on any rank (one
small all-reduce per step, only where such a weight exists). It also records the weights of the
stages other ranks hold: this rank's copies of them, which must get no gradient here (a loss term
using another rank's stage weight would train only the copy). Both by weak references: a rank that
drops the layers it does not hold frees them."""

from __future__ import annotations

import weakref
from collections.abc import Mapping, Sequence

import torch
import torch.distributed as dist
from torch import nn

from schedc.problem import Problem

from .errors import PlanMismatchError
from .waits import same_everywhere

Holders = tuple[tuple[int, frozenset[str]], ...]
"""One shared weight: (stage, its names in that stage's module) for each stage holding it."""


class StageModules(dict):
    """``split_stages``' answer: {stage: module}; ``shared``, the trainable weights that stages on
    different ranks hold as one Parameter here, and ``across``, every such weight, frozen ones too,
    by a weak reference; ``outside``, the other ranks' stage weights, likewise (weak references: a
    rank that drops the layers it does not hold frees them)."""

    shared: tuple[Holders, ...] = ()
    across: tuple[tuple[weakref.ref, Holders], ...] = ()
    outside: tuple[tuple[weakref.ref, str], ...] = ()
    cut: int | None = None
    """``stages.cut_digest`` of the layers and bounds the stages were cut with."""


def shared_across_ranks(layers: list[nn.Module], bounds: Sequence[tuple[int, int]], problem: Problem
                        ) -> tuple[Holders, ...]:
    """Every trainable Parameter held by stages on two or more ranks, with every name it has in each
    (a frozen one cannot drift apart while frozen: ``SplitChecks`` watches it)."""
    return tuple(holders for param, holders in _across_ranks(layers, bounds, problem) if param.requires_grad)


def across_ranks(layers: list[nn.Module], bounds: Sequence[tuple[int, int]], problem: Problem
                 ) -> tuple[tuple[weakref.ref, Holders], ...]:
    """Every Parameter held by stages on two or more ranks, frozen or not: the same on every rank,
    which cut the same layers."""
    return tuple((weakref.ref(param), holders) for param, holders in _across_ranks(layers, bounds, problem))


def _across_ranks(layers: list[nn.Module], bounds: Sequence[tuple[int, int]], problem: Problem
                  ) -> list[tuple[nn.Parameter, Holders]]:
    params: dict[int, nn.Parameter] = {}
    holders: dict[int, dict[int, set[str]]] = {}
    for s, (lo, hi) in enumerate(bounds):
        for i in range(lo, hi):
            for name, param in layers[i].named_parameters(remove_duplicate=False):
                params[id(param)] = param
                holders.setdefault(id(param), {}).setdefault(s, set()).add(f"{i - lo}.{name}")
    return [(params[key], tuple((s, frozenset(names)) for s, names in sorted(by_stage.items())))
            for key, by_stage in holders.items() if len({problem.stage_rank[s] for s in by_stage}) > 1]


def outside_weights(layers: list[nn.Module], bounds: Sequence[tuple[int, int]], problem: Problem, rank: int
                    ) -> tuple[tuple[weakref.ref, str], ...]:
    """The weights of stages that other ranks hold and none of this rank's stages does, named."""
    mine = {id(param) for s in problem.rank_stages[rank] for i in range(*bounds[s])
            for param in layers[i].parameters()}
    outside: dict[int, tuple[weakref.ref, str]] = {}
    for s, (lo, hi) in enumerate(bounds):
        for i in range(lo, hi):
            for name, param in layers[i].named_parameters():
                if id(param) not in mine:
                    where = f"stage {s}'s {i - lo}.{name!s} (layer {i}, on rank {problem.stage_rank[s]})"
                    outside.setdefault(id(param), (weakref.ref(param), where))
    return tuple(outside.values())


def untied_errors(shared: Sequence[Holders], ties: Sequence[Sequence]) -> list[str]:
    """A shared weight that no one tie lists in every stage holding it (by any of its names)."""
    declared = [{tuple(copy) for copy in tie} for tie in ties]
    for weight in shared:
        if not any(all(any((s, n) in tie for n in names) for s, names in weight) for tie in declared):
            held = " and ".join(f"stage {s}'s {min(names)!r}" for s, names in weight)
            return [f"{held} are one Parameter in Python, held on different ranks: declare them as a tie, "
                    "ties=[stage_parameters(layers, problem, param)], or each rank's copy trains apart"]
    return []


class SplitChecks:
    """What ``split_stages`` recorded beyond this rank's stages, checked at every step (stages built
    without it record nothing)."""

    def __init__(self, stages: Mapping[int, nn.Module], ties: Sequence[Sequence], rank: int,
                 group: dist.ProcessGroup | None, device: torch.device, timeout: float | None) -> None:
        self.watched = [(ref, holders) for ref, holders in getattr(stages, "across", ())
                        if untied_errors([holders], ties)]  # frozen at the split (trainable: refused)
        self.outside = getattr(stages, "outside", ())
        self.rank, self.group, self.device, self.timeout = rank, group, device, timeout

    def before_step(self) -> dict[int, tuple[object, int]]:
        """Refuses a weight shared across ranks, frozen at the split and trainable now on any rank,
        that no tie covers: one MAX all-reduce of a flag per such weight (only where there is one:
        the same on every rank), so every rank refuses alike, the ranks that hold no copy of it
        too, before any message; then the other ranks' stage weights' gradients as they stand
        (the tensor and its version), for ``check_grads``."""
        if self.watched:
            flags = [int((param := ref()) is not None and param.requires_grad) for ref, _ in self.watched]
            flags, _ = same_everywhere(flags, [], self.group, self.device, self.timeout,
                                       f"rank {self.rank}: the unfrozen-weight check")
            unfrozen = [holders for flag, (_, holders) in zip(flags, self.watched, strict=True) if flag]
            if unfrozen:
                raise PlanMismatchError(f"rank {self.rank}: unfrozen since split_stages: "
                                        f"{untied_errors(unfrozen, [])[0]}")
        return {k: _grad_state(param) for k, (ref, _) in enumerate(self.outside)
                if (param := ref()) is not None and param.requires_grad}

    def check_grads(self, before: Mapping[int, tuple[object, int]]) -> None:
        """Refuses a step that gave one of them a gradient on this rank: it went to this rank's copy
        and never reaches the weight its own rank trains (a loss term using another rank's stage
        weight). Called once the step's collectives are done, so that no peer waits for this rank."""
        for k, (ref, where) in enumerate(self.outside):
            param = ref()
            if param is None or k not in before:
                continue
            grad, version = _grad_state(param)
            if grad is not before[k][0] or version != before[k][1]:
                raise PlanMismatchError(
                    f"rank {self.rank}: {where} got a gradient on rank {self.rank}, which holds only a copy "
                    "of it: that part of its gradient never reaches the weight its own rank trains; use a "
                    "stage's weight only on the rank that holds the stage")


def _grad_state(param: nn.Parameter) -> tuple[object, int]:
    grad = param.grad
    return (None, 0) if grad is None else (grad, grad._version)
