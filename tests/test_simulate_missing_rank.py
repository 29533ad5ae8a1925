# sed -i '306s/problem.stage_rank\[a.stage\]/a.stage/' schedc/simulate.py
"""simulate's one-line error for a missing action names the rank that holds its stage, which is not
the stage's number once a rank holds several stages."""

from __future__ import annotations

import pytest

from schedc.actions import Action
from schedc.errors import ScheduleError
from schedc.problem import Problem
from schedc.simulate import simulate
from tests.test_simulate import orders


def test_a_missing_action_of_a_later_stage_names_its_rank() -> None:
    """Looped over two ranks, stage 2 sits on rank 0 (2 mod 2): a missing 2W0 is rank 0's, not
    "rank 2" of a two-rank problem."""
    problem = Problem(p=2, m=1, v=2)
    assert problem.stage_rank[2] == 0
    full = orders("0F0 2F0 2I0 2W0 0I0 0W0", "1F0 3F0 3I0 3W0 1I0 1W0")
    assert simulate(problem, full).makespan > 0
    short = (tuple(a for a in full[0] if a != Action("W", 2, 0)), full[1])
    with pytest.raises(ScheduleError, match=r"^rank 0 action 2W0: missing$"):
        simulate(problem, short)
