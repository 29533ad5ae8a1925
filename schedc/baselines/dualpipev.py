"""DualPipeV (DeepSeek-V3, arXiv 2412.19437; github.com/deepseek-ai/DualPipe, "cut-in-half" DualPipe).

V-shape placement, v = 2, as ZB-V: rank r holds chunk 0 = stage r and chunk 1 = stage 2p-1-r. Its
steady state pairs the forward of one chunk with the full backward of the other (DeepSeek overlaps
the pair's compute with its all-to-all, which this cost model does not see: here the pair runs
back to back), and only the cool-down splits backwards into I and W to fill bubbles.
"""

from __future__ import annotations

from collections import deque

from schedc.actions import Action
from schedc.baselines import register
from schedc.problem import Problem
from schedc.simulate import Orders


def _why_not(problem: Problem) -> str | None:
    if problem.placement != "vshape":
        return f"needs vshape placement (v = 2), got {problem.placement} v = {problem.v}"
    if problem.m < 2 * problem.p:
        return f"needs m >= 2p = {2 * problem.p} microbatches (one per stage), got m = {problem.m}"
    return None


class _Rank:
    """One rank's order under construction, as PyTorch's generator counts: a counter per (kind,
    chunk), and the I's whose W is still pending, oldest first."""

    def __init__(self, p: int, r: int, split: bool) -> None:
        self.stages = (r, 2 * p - 1 - r)
        self.split = split
        self.order: list[Action] = []
        self.count: dict[tuple[str, int], int] = {}
        self.pending_w: deque[tuple[int, int]] = deque()

    def _next(self, kind: str, chunk: int) -> int:
        mb = self.count.get((kind, chunk), 0)
        self.count[kind, chunk] = mb + 1
        return mb

    def f(self, chunk: int) -> None:
        self.order.append(Action("F", self.stages[chunk], self._next("F", chunk)))

    def b(self, chunk: int) -> None:
        """A full backward: B, or with the split backward I and W back to back, where torch's
        generator has a B: the same work, never slower (the gradient leaves after the I) and freeing
        memory no later. torch's own file, read as a CSV, replays its B's whole."""
        mb = self._next("I", chunk)
        if self.split:
            self.order += [Action("I", self.stages[chunk], mb), Action("W", self.stages[chunk], mb)]
        else:
            self.order.append(Action("B", self.stages[chunk], mb))

    def i(self, chunk: int) -> None:
        """An input gradient whose W waits in the queue; without the split, a full B."""
        if not self.split:
            self.b(chunk)
            return
        mb = self._next("I", chunk)
        self.order.append(Action("I", self.stages[chunk], mb))
        self.pending_w.append((chunk, mb))

    def w(self) -> None:
        """The oldest pending W, if any."""
        if self.pending_w:
            chunk, mb = self.pending_w.popleft()
            self.order.append(Action("W", self.stages[chunk], mb))

    def backward(self, chunk: int, zero_bubble: bool) -> None:
        """The cool-down's backward: an I whose W waits once the zero-bubble half has begun."""
        if zero_bubble:
            self.i(chunk)
        else:
            self.b(chunk)

    def fb(self, f_chunk: int, b_chunk: int) -> None:
        """DualPipeV's overlapped pair: F of one chunk, then B of the other."""
        self.f(f_chunk)
        self.b(b_chunk)


def _rank_order(p: int, r: int, m: int, split: bool) -> list[Action]:
    """PyTorch's ScheduleDualPipeV._calculate_single_rank_operations, step by step (m >= 2p)."""
    rank = _Rank(p, r, split)
    for _ in range(2 * (p - r - 1)):            # 1: F0
        rank.f(0)
    for _ in range(r + 1):                      # 2: F0 F1
        rank.f(0)
        rank.f(1)
    for _ in range(p - r - 1):                  # 3: I1 W F1 (zero bubble)
        rank.i(1)
        rank.w()
        rank.f(1)
    for _ in range(m - 2 * p + r + 1):          # 4: F0&B1, F1&B0
        rank.fb(0, 1)
        rank.fb(1, 0)
    for _ in range(p - r - 1):                  # 5: B1, F1&B0
        rank.b(1)
        rank.fb(1, 0)
    zb = False                                  # 6: B1 B0, the second half as I's
    for k in range(r + 1):
        zb = zb or (k == (r + 1) // 2 and r % 2 == 1)
        rank.backward(1, zb)
        zb = zb or (k == (r + 1) // 2 and r % 2 == 0)
        rank.backward(0, zb)
    for _ in range(p - r - 1):                  # 7: W, B0
        rank.w()
        rank.backward(0, zb)
    for _ in range(r + 1):                      # 8: the pending W's
        rank.w()
    return rank.order


@register("dualpipev", _why_not)
def dualpipev(problem: Problem) -> Orders:
    """DualPipeV in PyTorch's order (ScheduleDualPipeV), for m >= 2p microbatches.

    Rank r: 2(p-r-1) F0, r+1 pairs F0 F1, p-r-1 triples I1 W F1; then m-2p+r+1 rounds of F0&B1,
    F1&B0 (rank p-1 runs its first F0 and B1 without overlap, the same order here); p-r-1 rounds
    B1, F1&B0; r+1 pairs B1 B0, whose second half (from pair (r+1)//2) splits into I's; p-r-1
    rounds W, B0; then the pending W's. A full B is I then W back to back with the split backward.
    Without it, every I is a B and there are no W's: DualPipeV's order with its zero-bubble tail
    turned off.
    """
    return tuple(tuple(_rank_order(problem.p, r, problem.m, problem.split)) for r in range(problem.p))
