"""When each parameter's gradient is final within a step: the hook for overlapping a data-parallel
all-reduce with the rest of the pipeline (``PipelineRunner(grads_ready=...)``).

A backward (W, or B) adds to every trainable leaf under its stage's output: the stage's own
parameters, and any other it reaches (another stage's weight, a loss's own parameter). Which
leaves a stage reaches is read from the graph of its first forward in the step. A leaf is final
once the last backward of every stage on this rank that reaches it has run. By then every stage of
the rank has run a forward (a stage's last backward waits for the last microbatch's forward of
every later stage, and follows that of every earlier one), so no stage that reaches the leaf is
still unknown. A weight tied across ranks is final only after the step sums its copies' gradients
(``tied.py``): it is handed over at the step's end, with any leaf no backward of this rank reaches.
The tracker reports every leaf, with a gradient or not: the runner hands ``grads_ready`` those
that got one, and data-parallel averaging (``dp_grads.py``) counts the others as unused.
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
                 late: set[int]) -> None:
        self.last = {a.stage: a for a in order if a.kind in ("W", "B")}
        self.late = late
        self.reach: dict[int, dict[int, torch.Tensor]] = {
            stage: {id(p): p for p in tensors} for stage, tensors in params.items()}
        self.current: Action | None = None
        """The action running now (the runner sets it): ``final_now`` asks about it."""
        self.learned: set[int] = set()
        self.finished: set[int] = set()
        self.given: set[int] = set()

    def forward(self, stage: int, outputs: Sequence[torch.Tensor], inputs: Sequence[torch.Tensor]) -> None:
        """Learns the leaves the stage reaches, from its first forward of the step."""
        if stage not in self.learned:
            self.learned.add(stage)
            leaves = graph_leaves(outputs, inputs)
            self.reach.setdefault(stage, {}).update((id(leaf), leaf) for leaf in leaves)

    def done(self, action: Action) -> list[torch.Tensor]:
        """The leaves this action makes final (none unless it is its stage's last backward)."""
        if self.last.get(action.stage) != action:
            return []
        self.finished.add(action.stage)
        ready = [leaf for key, leaf in self.reach[action.stage].items()
                 if key not in self.late and key not in self.given
                 and all(s in self.finished for s, held in self.reach.items() if key in held)]
        return self._give(ready)

    def final_now(self, leaf: torch.Tensor) -> bool:
        """Whether an accumulation into ``leaf`` by the running action is its last of the step: the
        action is its stage's last backward and every other stage that reaches the leaf is done."""
        action = self.current
        if action is None or self.last.get(action.stage) != action or id(leaf) in self.late:
            return False
        holders = [s for s, held in self.reach.items() if id(leaf) in held]
        return all(s == action.stage or s in self.finished for s in holders)

    def rest(self) -> list[torch.Tensor]:
        """Everything not handed over yet: ties across ranks, leaves no backward here reaches."""
        leaves = {key: leaf for held in self.reach.values() for key, leaf in held.items()}
        return self._give([leaf for key, leaf in leaves.items() if key not in self.given])

    def _give(self, leaves: list[torch.Tensor]) -> list[torch.Tensor]:
        self.given.update(id(leaf) for leaf in leaves)
        return leaves
