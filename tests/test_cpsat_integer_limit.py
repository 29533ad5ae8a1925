# sed -i '75s/problem.num_tasks \* problem.comm/problem.m * problem.comm/' solvers/cpsat_model.py
# sed -i '85s/if ticks > MAX_TICKS:/if ticks >= MAX_TICKS:/' solvers/cpsat_model.py
# sed -i '91s/and units > MAX_TICKS:/and units >= MAX_TICKS:/' solvers/cpsat_model.py
# sed -i '91s/if any(c is not None for c in problem.binding_caps) and /if /' solvers/cpsat_model.py
"""The CP-SAT integer limit: a problem is refused exactly when a serial schedule could outgrow 2**50
ticks, counting every latency the serial schedule can pay (``cpsat_model.check_integer_model``)."""

from __future__ import annotations

from fractions import Fraction

import pytest

from schedc.errors import ProblemError
from schedc.problem import Problem
from schedc.simulate import simulate
from schedc.solvers import solve
from schedc.solvers.cpsat_model import MAX_TICKS, check_integer_model
from schedc.solvers.incumbent import sequential_orders


def test_a_serial_schedule_of_exactly_2_to_the_50_ticks_is_accepted() -> None:
    """The limit reads 'at most 2**50': one rank, one microbatch, F then B of 2**49 + 2**48 + 2**48
    time units (one tick each) is a serial schedule of exactly 2**50 ticks, within the limit; a
    '>=' refused it."""
    problem = Problem(p=1, m=1, split=False, tf=2**49, tb=2**48, tw=2**48)
    assert problem.time_scale == 1
    assert simulate(problem, sequential_orders(problem)).makespan == MAX_TICKS
    check_integer_model(problem)  # no error
    with pytest.raises(ProblemError, match="too large or too finely divided"):
        check_integer_model(Problem(p=1, m=1, split=False, tf=2**49 + 1, tb=2**48, tw=2**48))


def test_every_latency_of_a_split_serial_schedule_counts_against_the_limit() -> None:
    """A split microbatch crosses each of the p - 1 links twice (F forward, I back), and counting
    the latency only once per stage missed that: p=3, m=1 with comm 2**48 replays its sequential
    schedule in 4 * 2**48 + 7 ticks (F0 F1 F2 I2 I1 I0 W0 and four crossings), over 2**50, yet
    the check let it through."""
    problem = Problem(p=3, m=1, tf=1, tb=1, tw=1, comm=2**48)
    ticks = simulate(problem, sequential_orders(problem)).makespan * problem.time_scale
    assert ticks == 4 * 2**48 + 7 > MAX_TICKS
    with pytest.raises(ProblemError, match="too large or too finely divided"):
        check_integer_model(problem)


def test_memory_units_cp_sat_cannot_hold_are_refused_under_a_cap() -> None:
    """w_mem 1e-30 under a cap made the cap's cumulative hold 1e30 units per activation: a pybind
    RuntimeError (a traceback) from CP-SAT. A rank's m activations must fit in 2**50 units; without
    a cap the models hold no memory, and nothing is refused."""
    share = Fraction(1, 2**49)
    check_integer_model(Problem(p=1, m=2, w_mem=share, mem=1))  # exactly 2**50 units: no error
    with pytest.raises(ProblemError, match=r"^w_mem too finely divided for CP-SAT's integers"):
        check_integer_model(Problem(p=1, m=4, w_mem=share, mem=1))
    check_integer_model(Problem(p=1, m=4, w_mem=share, mem=4))  # a cap of m never binds: no cumulative
    check_integer_model(Problem(p=1, m=2, w_mem=share))
    with pytest.raises(ProblemError, match=r"or use --backend list"):
        solve(Problem(p=3, m=4, w_mem="1e-30", mem=2), time_limit=1, workers=1)
