"""Checks on ``solve()``'s own arguments, so a library caller gets one clear error naming the
argument (the CLI checks its flags first, with the flag's name)."""

from __future__ import annotations

import math
from decimal import Decimal
from numbers import Integral, Real
from typing import Any

from schedc.callables import check_callable
from schedc.errors import ArgumentError, ProblemError, shown
from schedc.problem import Problem
from schedc.solvers.cores import usable_cores

INT32 = 2**31
"""CP-SAT's seed is a 32-bit integer."""
MAX_WORKERS = 10_000
"""CP-SAT's own limit on num_workers: above it the model comes back MODEL_INVALID."""
MAX_TIME_LIMIT = 1e9
"""Longest time limit in seconds (about 30 years): a longer one is a typo, and the solvers scale
the limit into step counts and deadlines that an absurd one (1e308) overflows."""


def check_arguments(
    problem: Any, time_limit: Any, workers: Any, seed: Any, progress: Any
) -> tuple[float, int]:
    """The time limit in seconds and the worker count (None: every usable core, as
    ``cores.usable_cores`` counts them) after checking them all."""
    if not isinstance(problem, Problem):
        raise ArgumentError(f"solve needs a Problem, got {type(problem).__name__}")
    seconds = _seconds(time_limit)
    if not 0 < seconds <= MAX_TIME_LIMIT:  # a value out of range is a ProblemError, no number a TypeError
        error = ProblemError if _is_number(time_limit) else ArgumentError
        raise error("time_limit must be a positive, finite number of seconds, at most 1e9 "
                    f"(about 30 years), got {shown(time_limit)}")
    if workers is None:
        workers = usable_cores()
    if not _is_int(workers) or not 1 <= workers <= MAX_WORKERS:
        raise (ProblemError if _is_int(workers) else ArgumentError)(
            f"workers must be an integer from 1 to {MAX_WORKERS} (None: every usable core), got "
            f"{shown(workers)}")
    if not _is_int(seed) or not -INT32 <= seed < INT32:
        raise (ProblemError if _is_int(seed) else ArgumentError)(
            f"seed must be a 32-bit integer (-2**31 <= n < 2**31), got {shown(seed)}")
    if progress is not None:
        check_callable(progress, "progress", "progress(event), event a Progress", 1)
    return seconds, int(workers)


def _is_int(value: Any) -> bool:
    return isinstance(value, Integral) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    """A number of any kind (out of range or not): what is none is an argument of the wrong type."""
    return isinstance(value, Real | Decimal) and not isinstance(value, bool)


def _seconds(time_limit: Any) -> float:
    """The time limit as a float, NaN where it is none: float() raises on Decimal('sNaN') and on an
    int or Fraction beyond a float's range."""
    if not isinstance(time_limit, Real | Decimal) or isinstance(time_limit, bool):
        return math.nan
    try:
        return float(time_limit)
    except (ValueError, OverflowError):
        return math.nan
