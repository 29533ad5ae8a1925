"""The runner's own arguments, checked before anything is built: a wrong one is one line."""

from __future__ import annotations

from collections.abc import Sequence
from numbers import Real

from schedc.errors import ArgumentError
from schedc.plan import Plan

MAX_TIMEOUT_S = 1e7
"""About 4 months: a longer wait is a typo, and a timedelta of float('inf') does not exist."""


def check_arguments(plan: object, timeout: object, recv_ahead: object, ties: object) -> None:
    """The runner's own arguments, before anything is built: one line each."""
    if not isinstance(plan, Plan):
        raise ArgumentError(f"PipelineRunner needs a Plan (e.g. solve(problem) or baseline_plan(name, "
                            f"problem)), got {type(plan).__name__}")
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, Real)
                                or not 0 < float(timeout) <= MAX_TIMEOUT_S):
        raise ArgumentError(f"timeout must be a number of seconds in (0, {MAX_TIMEOUT_S:g}] (None: the "
                            f"process group's own), got {timeout!r}")
    if recv_ahead is not None and (type(recv_ahead) is not int or recv_ahead < 0):
        raise ArgumentError(f"recv_ahead must be None or an integer >= 0, got {recv_ahead!r}")
    if isinstance(ties, str | bytes) or not isinstance(ties, Sequence) or \
            not all(isinstance(t, Sequence) and not isinstance(t, str) for t in ties):
        raise ArgumentError("ties must be a list of ties, each a list of (stage, parameter name) pairs, "
                            f"e.g. [[(0, 'embed.weight'), (7, 'head.weight')]], got {ties!r:.80}")
