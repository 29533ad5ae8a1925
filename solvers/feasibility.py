"""Which activation caps admit a schedule at all.

Claim: a schedule exists exactly when every rank's cap is at least ``v * stage_activation = 1``
(one microbatch's activations through all the layers the rank holds).

Necessary. Take any rank r, its stages s_1 < ... < s_v in layer order, and any microbatch i. F(s_v, i)
depends (through the forward chain) on F(s_j, i) for every j < v, so those have started, and
allocated 1/v each, before F(s_v, i) starts. The backward of s_j (I or B, and W after it) depends
(through the backward chain) on the backward of s_v, which depends on F(s_v, i): none of them has
ended, so none of those activations has been freed. At the start of F(s_v, i) rank r therefore
holds v * (1/v) = 1 unit for microbatch i alone, and every other microbatch holds >= 0 (on a
stage, F allocates before its I and W free). The order-based accounting (``peak_memory``) sees
the same: F(s_j, i) precede F(s_v, i) in any deadlock-free order of rank r and their releases
follow it.

Sufficient. Run the microbatches one at a time: all tasks of microbatch i (in DAG order) before
any of microbatch i + 1. Each rank then holds at most microbatch i's activations, at most 1.
"""

from __future__ import annotations

from fractions import Fraction

from schedc.errors import InfeasibleError
from schedc.exact import fmt_exact
from schedc.problem import Problem


def min_feasible_cap(problem: Problem) -> Fraction:
    """The smallest cap under which some schedule exists (the same for every rank; see module doc)."""
    return problem.v * problem.stage_activation


def check_caps(problem: Problem) -> None:
    """Raises InfeasibleError naming the first rank whose cap is below ``min_feasible_cap``."""
    need = min_feasible_cap(problem)
    for rank, cap in enumerate(problem.mem):
        if cap is not None and cap < need:
            raise InfeasibleError(
                f"rank {rank} has activation cap {fmt_exact(cap)}, below the smallest feasible cap "
                f"{fmt_exact(need)} (one microbatch's activations on all of a rank's layers are alive "
                "at once)"
            )
