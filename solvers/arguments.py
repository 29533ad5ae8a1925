"""Checks on ``solve()``'s own arguments, so a library caller gets one clear error naming the
argument (the CLI checks its flags first, with the flag's name)."""

from __future__ import annotations

import math
import os
from decimal import Decimal
from numbers import Integral, Real
from typing import Any

from schedc.errors import ProblemError
from schedc.problem import Problem

INT32 = 2**31
"""CP-SAT's seed and worker count are 32-bit integers."""


def check_arguments(
    problem: Any, time_limit: Any, workers: Any, seed: Any, progress: Any
) -> tuple[float, int]:
    """The time limit in seconds and the worker count (None: every core) after checking them all."""
    if not isinstance(problem, Problem):
        raise TypeError(f"solve needs a Problem, got {type(problem).__name__}")
    number = isinstance(time_limit, Real | Decimal) and not isinstance(time_limit, bool)
    if not number or not 0 < float(time_limit) < math.inf:
        raise ProblemError(f"time_limit must be a positive, finite number of seconds, got {time_limit!r}")
    if workers is None:
        workers = os.cpu_count() or 1
    if not _is_int(workers) or not 1 <= workers < INT32:
        raise ProblemError(f"workers must be an integer of at least 1 (None: every core), got {workers!r}")
    if not _is_int(seed) or not -INT32 <= seed < INT32:
        raise ProblemError(f"seed must be a 32-bit integer (-2**31 <= n < 2**31), got {seed!r}")
    if progress is not None and not callable(progress):
        raise TypeError(f"progress must be a callable taking a Progress, got {type(progress).__name__}")
    return float(time_limit), int(workers)


def _is_int(value: Any) -> bool:
    return isinstance(value, Integral) and not isinstance(value, bool)
