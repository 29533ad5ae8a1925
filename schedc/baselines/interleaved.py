"""Interleaved 1F1B (Narayanan et al. 2021, arXiv 2104.04473): looped placement, v >= 2 stages per rank."""

from __future__ import annotations

from schedc.actions import Action
from schedc.baselines import register
from schedc.baselines.classic import backward_actions
from schedc.baselines.zero_bubble import deferred_w_order
from schedc.problem import Problem
from schedc.simulate import Orders


def _rounds(problem: Problem) -> int:
    """PyTorch's ScheduleInterleaved1F1B splits m into max(1, m // p) equal rounds: p microbatches
    each when p divides m, all m in one round when m < p."""
    return max(1, problem.m // problem.p)


def _per_round(problem: Problem) -> int:
    return problem.m // _rounds(problem)


def _why_not(problem: Problem, torch_class: str = "ScheduleInterleaved1F1B") -> str | None:
    if problem.placement != "looped" or problem.v < 2:
        return f"needs looped placement with v >= 2, got {problem.placement} v = {problem.v}"
    if problem.m % _rounds(problem):
        return (f"m = {problem.m} does not split into {_rounds(problem)} equal rounds of >= p = "
                f"{problem.p} microbatches (PyTorch's {torch_class} has the same limit)")
    return None


def _virtual(problem: Problem, step: int, forward: bool) -> tuple[int, int]:
    """(chunk, microbatch) of a rank's step-th forward or backward. Each round runs its microbatches
    through chunk 0, then chunk 1, ...; backwards visit the chunks in reverse."""
    per_round, v = _per_round(problem), problem.v
    chunk = (step // per_round) % v
    mb = (step // (per_round * v)) * per_round + step % per_round
    return (chunk if forward else v - 1 - chunk), mb


def _rank_order(problem: Problem, r: int) -> tuple[Action, ...]:
    p, total = problem.p, problem.v * problem.m
    warm = min((problem.v - 1) * _per_round(problem) + 2 * (p - 1 - r), total)

    def fwd(step: int) -> list[Action]:
        chunk, mb = _virtual(problem, step, forward=True)
        return [Action("F", chunk * p + r, mb)]

    def bwd(step: int) -> list[Action]:
        chunk, mb = _virtual(problem, step, forward=False)
        return backward_actions(problem, chunk * p + r, mb)

    order = [a for k in range(warm) for a in fwd(k)]
    for k in range(total - warm):
        order += fwd(warm + k) + bwd(k)
    order += [a for k in range(total - warm, total) for a in bwd(k)]
    return tuple(order)


@register("interleaved-1f1b", _why_not)
def interleaved_1f1b(problem: Problem) -> Orders:
    """PyTorch's ScheduleInterleaved1F1B order, and Megatron-Core's wherever p divides m (checked
    against its ``get_schedule_table`` order, microbatch groups of p, at NVIDIA/Megatron-LM 00611e6:
    every rank of p in {2, 3, 4, 8}, v in {2, 3, 4}, m from p to 4p; Megatron before it warmed up
    with every forward at m = p, holding more on the later ranks). Rounds of equal size where p does
    not divide m are torch's rule, where Megatron refuses m or needs its group size set by hand.

    Rank r runs v*m forwards and v*m backwards of (chunk, microbatch) pairs, chunk c being stage
    c*p + r. Warm-up: min((v-1)*R + 2*(p-1-r), v*m) forwards, R = microbatches per round (R = p
    when p divides m). Steady: one forward, then one backward. Cool-down: the remaining backwards.
    A split backward is I then W right away.

    Equal costs, p | m, unsplit: makespan m*T + (p-1)*T/v with T = tf+tb+tw (Megatron's bubble,
    v times smaller than 1F1B's). Peak activation on rank 0: (warm-up + 1)/v = p + (p-1)/v, i.e.
    Korthikanti et al. (2022)'s p*(1 + (p-1)/(p*v)) microbatches; at most m.
    """
    return tuple(_rank_order(problem, r) for r in range(problem.p))


def _why_not_bfs(problem: Problem) -> str | None:
    if problem.placement != "looped" or problem.v < 2:
        return f"needs looped placement with v >= 2 (v = 1 is gpipe), got {problem.placement} v = {problem.v}"
    return None


@register("looped-bfs", _why_not_bfs)
def looped_bfs(problem: Problem) -> Orders:
    """Breadth-first pipelining (Lamy-Poirier 2022, arXiv 2211.05953; PyTorch's ScheduleLoopedBFS):
    GPipe's fill and drain over v chunks (the drain in reverse microbatch order, as torch's; gpipe's
    runs in microbatch order, the same times relabelled). Rank r runs every microbatch's forward
    through its chunk 0, then chunk 1, ..., then the backwards, last chunk first and last
    microbatch first (a split backward is I then W right away). It holds all m microbatches on
    every chunk (peak m on every rank): the fewest rank switches, at the most memory. Unsplit,
    equal costs, m >= p: makespan m*T + (p-1)*T/v with T = tf+tb+tw, interleaved 1F1B's (tested).
    """
    p, v, m = problem.p, problem.v, problem.m

    def rank_order(r: int) -> tuple[Action, ...]:
        stages = [c * p + r for c in range(v)]
        forwards = [Action("F", s, i) for s in stages for i in range(m)]
        backwards = [a for s in reversed(stages) for i in reversed(range(m))
                     for a in backward_actions(problem, s, i)]
        return tuple(forwards + backwards)

    return tuple(rank_order(r) for r in range(p))


def _why_not_zb(problem: Problem) -> str | None:
    """The placement first: the hint to use interleaved-1f1b read wrong on a V shape, where that
    one does not apply either."""
    if reason := _why_not(problem, "ScheduleInterleavedZeroBubble"):
        return reason
    if not problem.split:
        return "needs the split backward (I and W); with --no-split use interleaved-1f1b"
    return None


def _zb_rank_order(problem: Problem, r: int) -> tuple[Action, ...]:
    """PyTorch's _get_1f1b_rank_ops with enable_zero_bubble, without its no-op slots: its warm-up,
    then F I W steps, is ZB-H1's one forward longer warm-up, then I W F steps."""
    p, total = problem.p, problem.v * problem.m
    warm = min((problem.v - 1) * _per_round(problem) + p - 1 - r, total)

    def stage_mb(step: int, forward: bool) -> tuple[int, int]:
        chunk, mb = _virtual(problem, step, forward)
        return chunk * p + r, mb

    forwards = [Action("F", *stage_mb(k, True)) for k in range(total)]
    backwards = [stage_mb(k, False) for k in range(total)]
    return deferred_w_order(forwards, backwards, warmup=warm + 1, defer=r)  # r W's pending, as ZB-H1


@register("interleaved-zb", _why_not_zb)
def interleaved_zb(problem: Problem) -> Orders:
    """Interleaved zero bubble: ZB-H1 over interleaved 1F1B (PyTorch's ScheduleInterleavedZeroBubble,
    the paper's ZB-1P with v chunks; with v = 1 it is zb-h1).

    Rank r: warm-up min((v-1)*R + p-1-r, v*m) forwards, half of interleaved 1F1B's extra depth, since
    no I waits for a W; steady F then I of (chunk, microbatch) pairs in interleaved 1F1B's order, each
    I followed by the W of the I r steps back; cool-down I's and W's, then the r pending W's.

    Equal costs t, p | m (measured by the simulator, tested): every rank ends together and the
    makespan is m*3t + (p-1)t/v, ZB-H1's bubble v times smaller, as interleaving divides 1F1B's.
    Rank r peaks at p - r(1-w_mem)/v: 1F1B's p on rank 0, below interleaved 1F1B's p + (p-1)/v.
    """
    return tuple(_zb_rank_order(problem, r) for r in range(problem.p))
