# sed -i '90s/if decisive(answer):/if True:/' solvers/forked_race.py
# sed -i '48s/child.kill()/child.terminate() if False else None/' solvers/forked_race.py
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


def test_the_first_decisive_answer_wins() -> None:
    assert race(lambda x: x, [(1,), (2,)], _deadline(), lambda a: a == 2, 0) == 2


def test_a_race_without_a_decisive_answer_gives_the_undecided_one() -> None:
    assert race(lambda x: x, [(1,), (3,)], _deadline(), lambda a: a == 2, "undecided") == "undecided"


def test_the_deadline_ends_a_race_whose_children_never_answer() -> None:
    t0 = time.perf_counter()
    assert race(time.sleep, [(600,)], t0 + 0.5, lambda a: True, "late") == "late"
    assert time.perf_counter() - t0 < 30  # the child was killed, not waited for


def test_a_child_that_dies_without_answering_is_an_internal_error() -> None:
    message = r"^internal error: a raced search's process ended without an answer$"
    with pytest.raises(ScheduleError, match=message):
        race(os._exit, [(3,)], _deadline(), lambda a: True, None)
