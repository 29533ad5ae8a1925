"""When each parameter's gradient is final within a step: the hook for overlapping a data-parallel
all-reduce with the rest of the pipeline (``PipelineRunner(grads_ready=...)``, ``dp_group=``).

A backward (W, or B) adds to every trainable leaf under its stage's output: the stage's own
parameters, and any other it reaches (another stage's weight, a loss's own parameter). Which
leaves a stage reaches is read from the graph of each of its forwards (a data-dependent branch may
reach a leaf on one microbatch only). A leaf is final once the last backward of its stage has run
and every other stage of this rank either has run its last backward too or has run all its
forwards without reaching the leaf: a stage with forwards still to come might reach it yet. A
weight tied across ranks is final only after the step sums its copies' gradients (``tied.py``):
it is handed over at the step's end, with any leaf no backward of this rank reaches. The tracker
reports every leaf, with a gradient or not: the runner hands ``grads_ready`` those that got one,
and data-parallel averaging (``dp_grads.py``) counts the others as unused.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import torch

from schedc.actions import Action

from .split_backward import graph_leaves


class GradsReady:
    """Tracks one step: ``forward`` after each F, ``done`` after each action (what it makes final),
    ``rest`` at the step's end."""

    def __init__(self, order: Sequence[Action], params: Mapping[int, list[torch.Tensor]],
                 late: set[int], m: int) -> None:
        self.last = {a.stage: a for a in order if a.kind in ("W", "B")}
        self.late, self.m = late, m
        self.reach: dict[int, dict[int, torch.Tensor]] = {stage: {} for stage in self.last}
        for stage, tensors in params.items():
            self.reach.setdefault(stage, {}).update((id(p), p) for p in tensors)
        self.forwards = dict.fromkeys(self.reach, 0)
        self.current: Action | None = None
        """The action running now (the runner sets it): ``final_now`` asks about it."""
        self.finished: set[int] = set()
        self.given: set[int] = set()

    def forward(self, stage: int, outputs: Sequence[torch.Tensor], inputs: Sequence[torch.Tensor]) -> None:
        """Adds the leaves this forward reaches to its stage's."""
        self.forwards[stage] = self.forwards.get(stage, 0) + 1
        self.reach.setdefault(stage, {}).update((id(leaf), leaf) for leaf in graph_leaves(outputs, inputs))

    def done(self, action: Action) -> list[torch.Tensor]:
        """The leaves this action makes final (none unless it is its stage's last backward)."""
        if self.last.get(action.stage) != action:
            return []
        self.finished.add(action.stage)
        known = {key: leaf for held in self.reach.values() for key, leaf in held.items()}
        return self._give([leaf for key, leaf in known.items()
                           if key not in self.late and key not in self.given and self._settled(key, None)])

    def final_now(self, leaf: torch.Tensor) -> bool:
        """Whether an accumulation into ``leaf`` by the running action can be its last of the step:
        the action is its stage's last backward, and no other stage of this rank may still add."""
        action = self.current
        if action is None or self.last.get(action.stage) != action or id(leaf) in self.late:
            return False
        return self._settled(id(leaf), action.stage)

    def _settled(self, key: int, running: int | None) -> bool:
        """No stage but ``running`` may still add to the leaf: each has run its last backward, or
        all its forwards without reaching it."""
        return all(s == running or s in self.finished or (self.forwards[s] >= self.m and key not in held)
                   for s, held in self.reach.items())

    def rest(self) -> list[torch.Tensor]:
        """Everything not handed over yet: ties across ranks, leaves no backward here reaches."""
        leaves = {key: leaf for held in self.reach.values() for key, leaf in held.items()}
        return self._give([leaf for key, leaf in leaves.items() if key not in self.given])

    def _give(self, leaves: list[torch.Tensor]) -> list[torch.Tensor]:
        self.given.update(id(leaf) for leaf in leaves)
        return leaves
