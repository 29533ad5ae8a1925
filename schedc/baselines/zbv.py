"""ZB-V (Qi et al. 2024, arXiv 2401.10241 sec. 6; "Pipeline parallelism with controllable memory").

V-shape placement, v = 2: rank r holds chunk 0 = stage r (on the way down) and chunk 1 = stage
2p-1-r (on the way back), so the last stage and the loss sit on rank 0 next to the first.
"""

from __future__ import annotations

from schedc.actions import Action
from schedc.baselines import register
from schedc.problem import Problem
from schedc.simulate import Orders


def _why_not(problem: Problem) -> str | None:
    if problem.placement != "vshape":
        return f"needs vshape placement (v = 2), got {problem.placement} v = {problem.v}"
    if not problem.split:
        return "needs the split backward (I and W): W passes are what fill its bubbles"
    return None


class _Rank:
    """One rank's order under construction, with a counter per (kind, chunk)."""

    def __init__(self, p: int, r: int) -> None:
        self.stages = (r, 2 * p - 1 - r)
        self.order: list[Action] = []
        self.count: dict[tuple[str, int], int] = {}

    def add(self, *passes: str) -> None:
        """Appends the next microbatch of each pass, written kind + chunk: 'F0', 'I1', 'W0'."""
        for name in passes:
            key = (name[0], int(name[1]))
            mb = self.count.get(key, 0)
            self.count[key] = mb + 1
            self.order.append(Action(key[0], self.stages[key[1]], mb))

    def done(self, name: str) -> int:
        return self.count.get((name[0], int(name[1])), 0)


def _rank_order(p: int, r: int, n: int) -> list[Action]:
    """The authors' handcrafted order for n >= 2p-1 microbatches (sail-sg's get_zb_v_schedule and
    PyTorch's ScheduleZBVZeroBubble generate the same)."""
    rank = _Rank(p, r)
    for _ in range(2 * (p - r) - 1):        # warm-up: nF0
        rank.add("F0")
    for _ in range(r):                      # nF1F0
        rank.add("F1", "F0")
    for _ in range(p - r):                  # nF1I1W1
        rank.add("F1", "I1", "W1")
    while rank.done("F1") < n:              # steady: F0 I0 W0 F1 I1 W1
        if rank.done("F0") < n:
            rank.add("F0")
        rank.add("I0", "W0", "F1", "I1", "W1")
    for _ in range(r):                      # cool-down: nI0I1
        rank.add("I0", "I1")
    for _ in range(p - r):                  # nI0W0, W0 of the oldest pending microbatch
        rank.add("I0", "W0")
    while rank.done("W1") < n:              # the pending W1's, then the W0's
        rank.add("W1")
    while rank.done("W0") < n:
        rank.add("W0")
    return rank.order


@register("zb-v", _why_not)
def zb_v(problem: Problem) -> Orders:
    """ZB-V, 1F1B's memory and zero bubble under equal costs.

    Rank r: warm-up 2(p-r)-1 F0, r pairs F1 F0, p-r triples F1 I1 W1; steady F0 I0 W0 F1 I1 W1
    (no F0 once all are in); cool-down r pairs I0 I1, p-r pairs I0 W0, then the pending W1's and
    W0's. It is built for n = max(m, 2p-1) microbatches and the extra ones are dropped (as PyTorch
    does), which keeps every order valid but leaves bubbles when m < 2p-1.

    Equal costs, m >= 2p-1: every rank's span is m(tf+tb+tw), zero bubble, and every rank peaks at
    p activations, 1F1B's (the authors' table: bubble rate 0, activation memory 1x 1F1B); the
    makespan adds the last rank's (p-1)tf/2 start-up. Designed for equal costs only: under others
    it stays valid but has no closed form.
    """
    n = max(problem.m, 2 * problem.p - 1)
    return tuple(
        tuple(a for a in _rank_order(problem.p, r, n) if a.mb < problem.m) for r in range(problem.p)
    )
