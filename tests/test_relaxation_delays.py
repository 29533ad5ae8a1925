# sed -i '159s/+ i \* self.dur1\[x\]/+ max(i - 1, 0) * self.dur1[x]/' solvers/relaxation.py
# sed -i '185s/self._release(a, first + i)/self._release(a, i)/' solvers/relaxation.py
# sed -i '167s/(self.m - i) \*/(self.m - i - 1) */' solvers/relaxation.py
# sed -i '75s/problem.num_tasks \* problem.comm/problem.m * problem.comm/' solvers/cpsat_model.py
"""The rank relaxation's delays at their exact values (solvers/relaxation.py): the other ranks'
groups before and after a kept task, counted in whole microbatches, and a horizon that holds the
relaxation's optimum. A delay counted short only weakens the bound, which every "bound <= optimum"
check still passes, so these pin the values worked out by hand."""

from __future__ import annotations

from schedc.problem import Problem
from schedc.solvers.relaxation import relaxed_rank_bound


def test_a_suffix_release_counts_the_dropped_microbatches_of_the_other_groups() -> None:
    """p = 3, m = 3, tb = 2, comm 1: I(1, i) waits for I(2, 0..i) one at a time on rank 2 and I(0, i)
    follows it: I(0, i) starts at >= 11 + 2i (F 1, 1, 1 and three latencies to I(2, 0) at 5, I 2 + 1
    to I(1, 0) at 8, 2 + 1 more). Rank 0 over microbatches 1 and 2 (first = 1): I(0, 1) from 13, then
    I(0, 2), W(0, 1) and W(0, 2) one at a time: 13 + 2 + 2 + 1 + 1 = 19. Counting the suffix's
    microbatches from 0 (or one group short) put I(0, 1) at 11: 17."""
    problem = Problem(p=3, m=3, tb=2, comm=1)
    assert relaxed_rank_bound(problem, 0, time_limit=5, first=1) == 19


def test_the_tail_after_a_task_counts_the_groups_still_to_run_on_other_ranks() -> None:
    """Rank 1 of p = 2, m = 4, stage 0's I costing 5: I(1, 0) ends at 3 at the earliest (F 1, F 1,
    I 1), and after it the four I's of stage 0 still run one at a time on rank 0, then a W:
    3 + 4 * 5 + 1 = 24 (the relaxation's optimum). One I short gave 19."""
    problem = Problem(p=2, m=4, stage_costs=[(1, 5, 1), (1, 1, 1)])
    assert relaxed_rank_bound(problem, 1, time_limit=5) == 3 + 4 * 5 + 1


def test_the_horizon_holds_a_relaxation_with_long_latencies() -> None:
    """p = 3, m = 1, comm 10: one microbatch down three stages and back crosses four latencies, so
    its critical path is 3 + 40 + 3 + 1 = 47 (F's, latencies, I's, W(0)), the relaxation's optimum
    for every rank. A horizon of the work plus one latency per stage and microbatch (40) is below
    it: the model is infeasible and the relaxation proved nothing (0)."""
    problem = Problem(p=3, m=1, comm=10)
    assert [relaxed_rank_bound(problem, r, time_limit=5) for r in range(3)] == [47, 47, 47]


def test_a_ctrl_c_in_a_relaxation_keeps_the_bound_it_proved(monkeypatch) -> None:
    """CP-SAT stops on a Ctrl-C as at its limit, with its bound (here the first rank's optimum, 47):
    it was dropped for a bare KeyboardInterrupt, and only earlier ranks' bounds counted (none here;
    found by a reviewer)."""
    import pytest

    from schedc.solvers import relaxation
    from schedc.solvers.progress import Interrupted

    real = relaxation.run_interruptible
    monkeypatch.setattr(relaxation, "run_interruptible", lambda *a, **k: (real(*a, **k)[0], True))
    with pytest.raises(Interrupted) as stop:
        relaxation.relaxation_bound(Problem(p=3, m=1, comm=10), time_limit=5)
    assert stop.value.plan is None and stop.value.floor == 47
