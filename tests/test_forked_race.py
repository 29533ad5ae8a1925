# sed -i '92s/if decisive(answer):/if decisive(answer) and not waiting:/' solvers/forked_race.py
# sed -i '92s/if decisive(answer):/if True:/' solvers/forked_race.py
# sed -i '49s/child.kill()/child.terminate() if False else None/' solvers/forked_race.py
"""``forked_race.race`` on stand-in targets: the first decisive answer wins, an undecided race
gives its own answer, and a child that dies without answering is an internal error, not a hang."""

from __future__ import annotations

import os
import time

import pytest

from schedc.errors import ScheduleError
from schedc.solvers.forked_race import can_fork, race

pytestmark = pytest.mark.skipif(not can_fork(), reason="no fork on this platform")


def _deadline() -> float:
    return time.perf_counter() + 60


def _after(seconds: float, answer: int) -> int:
    time.sleep(seconds)
    return answer


def test_the_first_decisive_answer_wins_without_waiting_for_the_others() -> None:
    t0 = time.perf_counter()
    assert race(_after, [(600, 1), (0, 2)], _deadline(), lambda a: a > 0, 0, "test") == 2
    assert time.perf_counter() - t0 < 30  # the sleeping child was killed, not waited for
    assert race(lambda x: x, [(1,), (2,)], _deadline(), lambda a: a == 2, 0, "test") == 2


def test_a_race_without_a_decisive_answer_gives_the_undecided_one() -> None:
    assert race(lambda x: x, [(1,), (3,)], _deadline(), lambda a: a == 2, "undecided", "test") == "undecided"


def test_the_deadline_ends_a_race_whose_children_never_answer() -> None:
    t0 = time.perf_counter()
    assert race(time.sleep, [(600,)], t0 + 0.5, lambda a: True, "late", "test") == "late"
    assert time.perf_counter() - t0 < 30  # the child was killed, not waited for


def test_a_child_that_dies_without_answering_is_an_internal_error() -> None:
    with pytest.raises(ScheduleError, match=r"^internal error: a probe's process ended without an answer$"):
        race(os._exit, [(3,)], _deadline(), lambda a: True, None, "probe")
