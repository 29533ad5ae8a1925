"""Weights shared in Python between stages on different ranks (``head.weight = embedding.weight``,
as nanoGPT ties them): each rank's process holds its own copy, so without a tie their gradients are
never summed and the copies train apart without a word. ``split_stages`` sees every layer and
records such weights; the runner refuses one that no tie covers, on every rank alike (every rank
cut the same layers)."""

from __future__ import annotations

from collections.abc import Sequence

from torch import nn

from schedc.problem import Problem

Holders = tuple[tuple[int, frozenset[str]], ...]
"""One shared weight: (stage, its names in that stage's module) for each stage holding it."""


class StageModules(dict):
    """``split_stages``' answer: {stage: module}, and ``shared``, the weights that stages on
    different ranks hold as one Parameter here."""

    shared: tuple[Holders, ...] = ()


def shared_across_ranks(layers: list[nn.Module], bounds: Sequence[tuple[int, int]], problem: Problem
                        ) -> tuple[Holders, ...]:
    """Every trainable Parameter held by stages on two or more ranks, with every name it has in each
    (a frozen one cannot drift apart; ``split_stages`` runs once, so one unfrozen later is missed)."""
    holders: dict[int, dict[int, set[str]]] = {}
    for s, (lo, hi) in enumerate(bounds):
        for i in range(lo, hi):
            for name, param in layers[i].named_parameters(remove_duplicate=False):
                if param.requires_grad:
                    holders.setdefault(id(param), {}).setdefault(s, set()).add(f"{i - lo}.{name}")
    return tuple(tuple((s, frozenset(names)) for s, names in sorted(by_stage.items()))
                 for by_stage in holders.values() if len({problem.stage_rank[s] for s in by_stage}) > 1)


def untied_errors(shared: Sequence[Holders], ties: Sequence[Sequence]) -> list[str]:
    """A shared weight that no one tie lists in every stage holding it (by any of its names)."""
    declared = [{tuple(copy) for copy in tie} for tie in ties]
    for weight in shared:
        if not any(all(any((s, n) in tie for n in names) for s, names in weight) for tie in declared):
            held = " and ".join(f"stage {s}'s {min(names)!r}" for s, names in weight)
            return [f"{held} are one Parameter in Python, held on different ranks: declare them as a tie, "
                    "ties=[stage_parameters(layers, problem, param)], or each rank's copy trains apart"]
    return []
