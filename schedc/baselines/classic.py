"""GPipe and 1F1B (one stage per rank)."""

from __future__ import annotations

from schedc.actions import Action
from schedc.baselines import register
from schedc.problem import Problem
from schedc.simulate import Orders


def _one_stage_per_rank(problem: Problem) -> str | None:
    return None if problem.v == 1 else f"needs v = 1 (one stage per rank), got v = {problem.v}"


def backward_actions(problem: Problem, stage: int, mb: int) -> list[Action]:
    """The backward of one microbatch: I then W right away, or one B."""
    if problem.split:
        return [Action("I", stage, mb), Action("W", stage, mb)]
    return [Action("B", stage, mb)]


@register("gpipe", _one_stage_per_rank)
def gpipe(problem: Problem) -> Orders:
    """All forwards, then all backwards, both in microbatch order (PyTorch's ScheduleGPipe; GPipe's
    figure runs the backwards in reverse, which relabels the drain: the same times and peaks)."""
    m = problem.m
    return tuple(
        tuple([Action("F", r, i) for i in range(m)]
              + [a for i in range(m) for a in backward_actions(problem, r, i)])
        for r in range(problem.p)
    )


@register("1f1b", _one_stage_per_rank)
def one_f_one_b(problem: Problem) -> Orders:
    """Synchronous 1F1B: rank r warms up with p - r forwards (at most m), then alternates one
    backward and one forward, then drains the remaining backwards. torch's Schedule1F1B runs this
    order but refuses m < p; here m < p is all forwards first, a valid order."""
    p, m = problem.p, problem.m
    orders = []
    for r in range(p):
        warm = min(p - r, m)
        order = [Action("F", r, i) for i in range(warm)]
        for i in range(m):
            order += backward_actions(problem, r, i)
            if warm + i < m:
                order.append(Action("F", r, warm + i))
        orders.append(tuple(order))
    return tuple(orders)
