# sed -i '175s/extra\[0\] \* (p - r)/extra[0] * (p - r - 1)/' solvers/list_scheduler.py
# sed -i '173s/"1f1b+1": (1, 1)/"1f1b+1": (1, 0)/' solvers/list_scheduler.py
# sed -i '173s/"2x1f1b": (2, 0)/"2x1f1b": (2, 1)/' solvers/list_scheduler.py
# sed -i '44s/sc.m \* sc.problem.v \* sc.unit/sc.m * sc.unit/' solvers/list_engine.py
"""The list scheduler's windows keep what their names say: '1f1b' at most p - r microbatches'
activations on rank r (1F1B's warm-up depth), '1f1b+1' one more, '2x1f1b' twice as many; a 'kN'
window of N >= m never binds. The forward-first rule fills rank 0 up to its window at the start
(every F there comes before the first backward returns), so its peak is the window exactly."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from schedc.problem import Problem
from schedc.simulate import simulate
from schedc.solvers.list_scheduler import run_rule


@pytest.mark.parametrize(("window", "depth"), [("1f1b", lambda p, r: p - r),
                                               ("1f1b+1", lambda p, r: p - r + 1),
                                               ("2x1f1b", lambda p, r: 2 * (p - r))])
def test_a_window_keeps_its_depth_and_forward_first_fills_rank_zero_to_it(window: str,
                                                                    depth: Callable[[int, int], int]) -> None:
    p = 3
    problem = Problem(p=p, m=8, v=1, tf=1, tb=1, tw=1)
    peaks = simulate(problem, run_rule(problem, "ff", window).orders).peak_mem
    assert all(peaks[r] <= depth(p, r) for r in range(p)), peaks
    assert peaks[0] == depth(p, 0)


@pytest.mark.parametrize("v", [1, 2])
def test_an_in_flight_window_of_all_microbatches_is_no_window_without_a_cap(v: int) -> None:
    """At most m microbatches exist, so 'k{m}' never holds one back: without a cap its plan is the
    plain one (the rank's stand-in cap must hold all m microbatches' full activations)."""
    problem = Problem(p=2, m=4, v=v, tf=1, tb=1, tw=1)
    for rule in ("ff", "zb"):
        assert run_rule(problem, rule, f"k{problem.m}").orders == run_rule(problem, rule, "none").orders
