"""Zero Bubble's handcrafted schedules ZB-H1 and ZB-H2 (Qi et al. 2024, arXiv 2401.10241, sec. 2).

Both are 1F1B with the backward split: the input gradient I stays on the critical path and the weight
gradient W, needed by nobody but the optimizer, is deferred to fill the bubbles. They need the split
backward: with ``--no-split`` there is no W to move and ZB-H1 would be plain 1F1B, so they do not apply.
"""

from __future__ import annotations

from schedc.actions import Action
from schedc.baselines import register
from schedc.problem import Problem
from schedc.simulate import Orders


def _why_not(problem: Problem) -> str | None:
    if problem.v != 1:
        return f"needs v = 1 (one stage per rank), got v = {problem.v}"
    if not problem.split:
        return "needs the split backward (I and W); with --no-split use 1f1b"
    return None


def deferred_w_order(forwards: list[Action], backwards: list[tuple[int, int]], warmup: int,
                     defer: int) -> tuple[Action, ...]:
    """One rank's order: ``warmup`` of its forwards, then for each (stage, microbatch) of its
    backwards in turn, its I, the W of the I ``defer`` steps back and the next forward; then the
    deferred W's. ZB-H1/H2 on one stage per rank, and interleaved zero bubble over chunks."""
    order = forwards[:warmup]
    done, weights = len(order), 0
    for k, (stage, mb) in enumerate(backwards):
        order.append(Action("I", stage, mb))
        if k >= defer:
            order.append(Action("W", *backwards[weights]))
            weights += 1
        if done < len(forwards):
            order.append(forwards[done])
            done += 1
    order += [Action("W", stage, mb) for stage, mb in backwards[weights:]]
    return tuple(order)


def _rank_order(r: int, m: int, warmup: int, defer: int) -> tuple[Action, ...]:
    return deferred_w_order([Action("F", r, i) for i in range(m)], [(r, i) for i in range(m)], warmup, defer)


@register("zb-h1", _why_not)
def zb_h1(problem: Problem) -> Orders:
    """ZB-H1, memory of 1F1B: PyTorch's order (ScheduleInterleavedZeroBubble at v = 1) and the
    paper's figure 3, as Megatron-DeepSpeed runs it with ``--enable-zbh1-exact-semantics``. The
    authors' default (their Megatron quick-start, DeepSpeed's default) runs each W right after its
    own I in the steady state and the first r W's last: the same F/I/W pattern with other
    microbatches on the W's, so the same makespan and peaks (checked on p=4, m=8 and 12).

    Rank r: warm-up p-r forwards (1F1B's), then I, W, F steps in which the first r W's are deferred
    (rank r keeps r W's pending), cool-down I, W, and its r deferred W's last: the tail is a
    trapezoid. Equal costs, m >= p: every rank ends at the same time and the largest span is
    m(tf+tb+tw) + (p-1)(tf+tb-tw) (the paper's bubble, a third of 1F1B's); the formula needs
    tw <= min(tf, tb). Peak activation p - r + r*w_mem on rank r (forwards in flight plus the
    pending W's share), p on rank 0: 1F1B's.
    """
    p = problem.p
    return tuple(_rank_order(r, problem.m, warmup=p - r, defer=r) for r in range(p))


@register("zb-h2", _why_not)
def zb_h2(problem: Problem) -> Orders:
    """ZB-H2, zero bubble for up to 2p-1 activations (our reading of the paper's figure 3).

    Rank r: warm-up 2(p-r)-1 forwards (filling 1F1B's idle wait for the first I), then I, W, F
    steps in which the first 2r W's are deferred, cool-down I, W, then its 2r deferred W's: the
    tail becomes a parallelogram. m >= 2p-1 and tw <= min(tf, tb): the largest span is m(tf+tb+tw)
    + the paper's bubble (p-1)(tf+tb-2tw), zero under equal costs; under equal costs the makespan
    adds the last rank's (p-1)tf start-up (under unequal ones a rank's longer span may hide it). Peak
    activation 2p-1-2r + 2r*w_mem on rank r (forwards in flight plus the pending W's share),
    2p-1 on rank 0.
    """
    p = problem.p
    return tuple(_rank_order(r, problem.m, warmup=2 * (p - r) - 1, defer=2 * r) for r in range(p))
