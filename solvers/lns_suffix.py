"""The suffix of an LNS window in its fixed order, as both objectives' tails read it (``lns``'s
makespan tails, ``lns_span``'s span tails): the suffix is replayed as soon as possible in the
incumbent's order, so its chains run along the DAG's edges and each rank's remaining order."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import TYPE_CHECKING

from schedc.actions import Action

if TYPE_CHECKING:
    from schedc.solvers.lns import _Replay


@dataclass(frozen=True)
class SuffixOrder:
    next_on_rank: dict[Action, Action]
    """The suffix task after each one on its rank (none after a rank's last)."""
    first: dict[int, Action]
    """Per rank with suffix tasks: the first of them, which waits for the rank's window tasks."""
    latest_first: list[Action]
    """The suffix by start time, latest first (ties: later on its rank first): every task after
    every task it precedes, so one pass over it fills the tails."""

    def successors(self, rp: _Replay, a: Action) -> list[tuple[Action, int]]:
        """(task, lag) a suffix task ``a`` passes its end to: its DAG successors and its rank's next."""
        nxt = self.next_on_rank.get(a)
        return [*rp.succs[a], *([(nxt, 0)] if nxt is not None else [])]

    def entries(self, rp: _Replay, a: Action, suffix: set[Action]) -> list[tuple[Action, int]]:
        """(task, lag) through which a free task ``a`` reaches the suffix: its successors there and
        its rank's first suffix task."""
        first = self.first.get(rp.problem.stage_rank[a.stage])
        inside = [(u, g) for u, g in rp.succs[a] if u in suffix]
        return inside + ([(first, 0)] if first is not None else [])


def suffix_order(rp: _Replay, suffix: set[Action]) -> SuffixOrder:
    """The suffix's rank chains and a reverse topological order of it (the class doc)."""
    next_on_rank: dict[Action, Action] = {}
    first: dict[int, Action] = {}
    for r, order in enumerate(rp.orders):
        rest = [a for a in order if a in suffix]
        next_on_rank.update(itertools.pairwise(rest))
        if rest:
            first[r] = rest[0]
    position = {a: k for order in rp.orders for k, a in enumerate(order)}
    return SuffixOrder(next_on_rank, first, sorted(suffix, key=lambda x: (-rp.start[x], -position[x])))


def fixed_ready(rp: _Replay, order: SuffixOrder, u: Action, prefix: set[Action],
                before: dict[int, list[Action]], free_ranks: set[int]) -> int | None:
    """Earliest start of suffix task ``u`` from what the window leaves fixed: its prefix inputs and,
    as its rank's first suffix task on a rank with no free task, that rank's last prefix task (None
    if nothing fixed precedes it)."""
    ready = [rp.end[d] + g for d, g in rp.preds[u] if d in prefix]
    r = rp.problem.stage_rank[u.stage]
    if order.first.get(r) == u and before[r] and r not in free_ranks:
        ready.append(rp.end[before[r][-1]])
    return max(ready, default=None)
