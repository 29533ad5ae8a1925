"""When each parameter's gradient is final within a step: the hook for overlapping a data-parallel
all-reduce with the rest of the pipeline (``PipelineRunner(grads_ready=...)``).

A parameter's gradient is final once the last backward (W, or B unsplit) of every stage on this rank
that holds it has run: later actions only touch other stages. A weight tied across ranks is final
only after the step sums its copies' gradients (``tied.py``), so it is released at the step's end.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import torch

from schedc.actions import Action


class GradsReady:
    """Per action, the parameters whose gradients it makes final; the rest at the step's end."""

    def __init__(self, order: Sequence[Action], params: Mapping[int, list[torch.Tensor]],
                 late: set[int]) -> None:
        last = {a.stage: a for a in order if a.kind in ("W", "B")}
        holders: dict[int, set[int]] = {}
        for stage, tensors in params.items():
            for p in tensors:
                holders.setdefault(id(p), set()).add(stage)
        by_id = {id(p): p for tensors in params.values() for p in tensors}
        done: set[int] = set()
        self.at: dict[Action, list[torch.Tensor]] = {}
        for a in order:
            if last.get(a.stage) != a:
                continue
            done.add(a.stage)
            ready = [pid for pid in holders if pid not in late and a.stage in holders[pid] <= done]
            self.at[a] = [by_id[pid] for pid in ready]
            for pid in ready:
                del holders[pid]
        self.end = [by_id[pid] for pid in holders]
        """Weights tied across ranks, and any stage's weights no W or B of this rank touches."""
