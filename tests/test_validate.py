# sed -i '132s/str(self.placement)/self.placement/' schedc/problem.py
# sed -i '79s/str(getattr(self, name))/getattr(self, name)/' schedc/plan.py
"""Validator and Plan: one-line errors naming rank, position and action."""

from __future__ import annotations

import importlib
from dataclasses import replace
from fractions import Fraction as F

import pytest

from schedc.actions import Action
from schedc.baselines import baseline_plan
from schedc.errors import ArgumentError, PlanFormatError, ScheduleError
from schedc.plan import Plan
from schedc.problem import Problem
from schedc.simulate import Slot, simulate
from schedc.validate import (
    error_count,
    memory_errors,
    replay_errors,
    structural_errors,
    timing_errors,
    validate,
)

validate_module = importlib.import_module("schedc.validate")  # schedc re-exports validate()


def orders(*ranks: str) -> tuple[tuple[Action, ...], ...]:
    return tuple(tuple(Action.parse(t) for t in rank.split()) for rank in ranks)


PROBLEM = Problem(p=2, m=2)
ONE_F_ONE_B = orders("0F0 0F1 0I0 0W0 0I1 0W1", "1F0 1I0 1W0 1F1 1I1 1W1")
GPIPE_UNSPLIT = orders("0F0 0F1 0F2 0F3 0B3 0B2 0B1 0B0", "1F0 1F1 1F2 1F3 1B3 1B2 1B1 1B0")


def test_valid_orders_have_no_errors():
    assert validate(PROBLEM, ONE_F_ONE_B) == []


@pytest.mark.parametrize(
    "ranks, expected",
    [
        (("0F0 0F1 0I0 0W0 0I1 0W1 0F7", "1F0 1I0 1W0 1F1 1I1 1W1"),
         "rank 0 position 6 action 0F7: not a task of 2 stages x 2 microbatches "
         "(F/I/W, or B for I and W together)"),
        (("0F0 0F1 0I0 0W0 0I1 0W1 0B0", "1F0 1I0 1W0 1F1 1I1 1W1"),
         "rank 0 position 2 action 0I0: the orders also run this backward whole as 0B0"),
        (("0F0 0F1 0I0 0W0 0I1 0W1", "1F0 1I0 1W0 1F1 1I1 1W1 1I1"),
         "rank 1 position 6 action 1I1: duplicated"),
        (("0F0 0F1 0I0 0W0 0I1", "1F0 1I0 1W0 1F1 1I1 1W1"), "rank 0 action 0W1: missing"),
        (("0F0 0F1 0I0 0W0 0I1 1W1", "1F0 1I0 1W0 1F1 1I1 0W1"),
         "rank 0 position 5 action 1W1: stage 1 belongs to rank 1 under looped placement"),
        (("0F0 0F1 0I0 0W0 0I1 0W1",), "plan has 1 rank, the problem has p = 2"),
    ],
)
def test_structural_errors_name_rank_position_action(ranks, expected):
    errors = validate(PROBLEM, orders(*ranks))
    assert any(e.startswith(expected) for e in errors), errors
    assert all("\n" not in e for e in errors)


def test_a_stray_copy_on_a_wrong_rank_is_the_one_error():
    """A copy on a wrong rank is its error; the one on its own rank, listed after it, was called a
    duplicate as well (two errors for one stray token); a later copy on its own rank still is."""
    wrong_rank_first = orders("0F0 0F1 0I0 0W0 0I1 0W1 1F0", "1F0 1I0 1W0 1F1 1I1 1W1")
    assert validate(PROBLEM, wrong_rank_first) == [
        "rank 0 position 6 action 1F0: stage 1 belongs to rank 1 under looped placement"]
    twice_on_its_own = orders("0F0 0F1 0I0 0W0 0I1 0W1 1F0", "1F0 1I0 1F0 1W0 1F1 1I1 1W1")
    assert validate(PROBLEM, twice_on_its_own) == [
        "rank 0 position 6 action 1F0: stage 1 belongs to rank 1 under looped placement",
        "rank 1 position 2 action 1F0: duplicated"]


def test_every_missing_action_counts(monkeypatch):
    """Each is listed up to LISTED_MISSING, and one line stands for the rest: counts stay exact."""
    errors = structural_errors(PROBLEM, orders("0F0", "1F0"))
    assert len(errors) == error_count(errors) == PROBLEM.num_tasks - 2
    assert all(e.endswith(": missing") for e in errors)
    monkeypatch.setattr(validate_module, "LISTED_MISSING", 3)
    errors = structural_errors(PROBLEM, orders("0F0", "1F0"))
    assert len(errors) == 4 and errors[-1] == f"... and {PROBLEM.num_tasks - 5} more missing actions"
    assert error_count(errors) == PROBLEM.num_tasks - 2
    with pytest.raises(ScheduleError, match=rf"missing \(\+{PROBLEM.num_tasks - 3} more errors\)$"):
        Plan(problem=PROBLEM, orders=orders("0F0", "1F0"), source="t")  # a plan's error: first + count


def test_misplaced_action_is_not_also_reported_missing():
    errors = structural_errors(PROBLEM, orders("0F0 0F1 0I0 0W0 0I1 1W1", "1F0 1I0 1W0 1F1 1I1 0W1"))
    assert len(errors) == 2 and not any("missing" in e for e in errors)


def test_deadlock_is_one_error():
    errors = validate(PROBLEM, orders("0F0 0I0 0F1 0W0 0I1 0W1", "1F1 1F0 1I0 1W0 1I1 1W1"))
    assert len(errors) == 1
    assert errors[0].startswith("deadlock: rank 0 position 1 action 0I0 waits for 1I0 (rank 1 position 2)")


def test_cap_exceeded_names_the_first_action_over_it():
    problem = Problem(p=2, m=4, split=False, tw=0, mem=(F(3, 2), 4))
    errors = validate(problem, GPIPE_UNSPLIT)
    assert errors == ["rank 0 position 1 action 0F1: activation memory 2 exceeds the cap 1.5"]
    assert validate(problem, GPIPE_UNSPLIT, check_memory=False) == []


def test_cap_equal_to_the_peak_fits():
    problem = Problem(p=2, m=4, split=False, tw=0, mem=4)
    assert validate(problem, GPIPE_UNSPLIT) == []
    assert validate(Problem(p=2, m=4, split=False, tw=0, mem=F(39, 10)), GPIPE_UNSPLIT) == [
        "rank 0 position 3 action 0F3: activation memory 4 exceeds the cap 3.9",
        "rank 1 position 3 action 1F3: activation memory 4 exceeds the cap 3.9",
    ]


def test_cap_messages_are_exact_when_a_decimal_would_round():
    problem = Problem(p=1, m=3, v=3, split=False, mem=F(7, 3) - F(1, 10**9))
    order = orders(" ".join(f"{s}F{i}" for i in range(3) for s in range(3))
                   + " " + " ".join(f"{s}B{i}" for i in range(3) for s in reversed(range(3))))
    problem_ok = Problem(p=1, m=3, v=3, split=False)
    assert validate(problem_ok, order) == []
    errors = memory_errors(problem, simulate(problem, order))
    assert errors == [
        "rank 0 position 6 action 0F2: activation memory 7/3 exceeds the cap 6999999997/3000000000"]


def test_a_plan_of_invalid_orders_raises_the_first_error_and_a_count():
    with pytest.raises(ScheduleError, match=r"^rank 0 action 0I1: missing \(\+1 more error\)$"):
        Plan(problem=PROBLEM, orders=orders("0F0 0F1 0I0 0W0", "1F0 1I0 1W0 1F1 1I1 1W1"), source="t")


def _slots(rows):
    return tuple(tuple(Slot(Action.parse(a), F(s), F(e)) for a, s, e in row) for row in rows)


def test_timing_errors_catch_impossible_recorded_times():
    problem = Problem(p=2, m=1)
    good = simulate(problem, orders("0F0 0I0 0W0", "1F0 1I0 1W0")).slots
    assert timing_errors(problem, good) == []
    long = _slots([[("0F0", 0, 2), ("0I0", 3, 4), ("0W0", 4, 5)],
                   [("1F0", 2, 3), ("1I0", 3, 4), ("1W0", 4, 5)]])
    assert timing_errors(problem, long) == [  # every slot with something wrong, the first thing each
        "rank 0 position 0 action 0F0: lasts 2, its cost is 1",
        "rank 0 position 1 action 0I0: starts at 3 before its input 1I0 arrives at 4"]
    overlap = _slots([[("0F0", 0, 1), ("0I0", 3, 4), ("0W0", "7/2", "9/2")], [("1F0", 1, 2), ("1I0", 2, 3),
                                                                              ("1W0", 3, 4)]])
    assert timing_errors(problem, overlap) == [
        "rank 0 position 2 action 0W0: starts at 3.5, overlapping 0I0 which ends at 4"]
    swapped = _slots([[("0I0", 3, 4), ("0F0", 0, 1), ("0W0", 4, 5)], [("1F0", 1, 2), ("1I0", 2, 3),
                                                                      ("1W0", 3, 4)]])
    assert timing_errors(problem, swapped)[0] == (  # it said "overlapping 0I0"
        "rank 0 position 1 action 0F0: starts at 0, before 0I0 (at 3), which is listed ahead of it: list a "
        "rank's actions in the order they run")
    early = _slots([[("0F0", 0, 1), ("0I0", 3, 4), ("0W0", 4, 5)], [("1F0", "1/2", "3/2"), ("1I0", 2, 3),
                                                                    ("1W0", 3, 4)]])
    assert timing_errors(problem, early) == [
        "rank 1 position 0 action 1F0: starts at 0.5 before its input 0F0 arrives at 1"]
    assert timing_errors(problem, good[:1]) == ["plan has 1 rank, the problem has p = 2"]
    latent = _slots([[("0F0", 0, 1), ("0I0", 5, 6), ("0W0", 6, 7)], [("1F0", 1, 2), ("1I0", 2, 3),
                                                                     ("1W0", 3, 4)]])
    assert timing_errors(replace(problem, comm=1), latent) == [  # what arrives, not what ends
        "rank 1 position 0 action 1F0: starts at 1 before its input 0F0 arrives at 2"]


def test_replay_errors_catch_times_that_are_possible_but_not_the_replays():
    problem = Problem(p=2, m=1)
    timeline = simulate(problem, orders("0F0 0I0 0W0", "1F0 1I0 1W0"))
    late = _slots([[("0F0", 0, 1), ("0I0", 3, 4), ("0W0", 5, 6)],
                   [("1F0", 1, 2), ("1I0", 2, 3), ("1W0", 4, 5)]])
    assert timing_errors(problem, late) == []
    assert replay_errors(timeline, late) == [
        "rank 0 position 2 action 0W0: recorded at 5-6, the replay runs it at 4-5",
        "rank 1 position 2 action 1W0: recorded at 4-5, the replay runs it at 3-4"]
    assert replay_errors(timeline, timeline.slots) == []


# ---- Plan ---------------------------------------------------------------------------------------


def test_plan_checks_structure_and_deadlock_on_construction():
    with pytest.raises(ScheduleError, match=r"rank 0 action 0W1: missing"):
        Plan(problem=PROBLEM, orders=orders("0F0 0F1 0I0 0W0 0I1", "1F0 1I0 1W0 1F1 1I1 1W1"), source="x")
    with pytest.raises(ScheduleError, match=r"^deadlock: rank 0"):
        Plan(problem=PROBLEM, orders=orders("0F0 0I0 0F1 0W0 0I1 0W1", "1F1 1F0 1I0 1W0 1I1 1W1"), source="x")


def test_plan_figures_come_from_the_simulator():
    plan = Plan(problem=PROBLEM, orders=ONE_F_ONE_B, source="1f1b", lower_bound=F(15, 2))
    assert plan.timeline == simulate(PROBLEM, ONE_F_ONE_B)
    assert plan.makespan == plan.value == 8
    assert plan.gap == F(1, 16)
    assert Plan(problem=PROBLEM, orders=ONE_F_ONE_B, source="1f1b").gap is None


def test_span_objective_can_be_below_the_makespan():
    problem = Problem(p=2, m=1, stage_costs=((1, 1, 0), (1, 1, 5)))  # rank 1's W is long
    plan = Plan(problem=problem, orders=orders("0F0 0I0 0W0", "1F0 1I0 1W0"), source="x", objective="span")
    assert plan.timeline.spans == (4, 7)
    assert (plan.makespan, plan.value) == (8, 7)


def test_plan_over_its_cap_is_a_plan_that_does_not_fit():
    problem = Problem(p=2, m=4, split=False, tw=0, mem=3)
    plan = Plan(problem=problem, orders=GPIPE_UNSPLIT, source="gpipe")
    assert not plan.fits()
    assert plan.violations() == [
        "rank 0 position 3 action 0F3: activation memory 4 exceeds the cap 3",
        "rank 1 position 3 action 1F3: activation memory 4 exceeds the cap 3",
    ]


@pytest.mark.parametrize("order", [[("F", 0, 0), ("B", 0, 0)], ["0F0", "0B0"]])
def test_plan_accepts_triples_and_tokens_and_normalises_them(order):
    plan = Plan(problem=Problem(p=1, m=1, split=False), orders=[order], source="x")
    assert plan.orders == ((Action("F", 0, 0), Action("B", 0, 0)),)
    assert type(plan.orders[0][0]) is Action


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"status": "great"}, "status must be one of"),
        ({"objective": "speed"}, "objective must be one of"),
        ({"source": 3}, "source must be a string"),
        ({"solve_seconds": 10**400}, "solve_seconds must be a finite number >= 0, got 1000"),
        ({"solve_seconds": "fast"}, "solve_seconds must be a finite number"),
        ({"solve_seconds": float("nan")}, "solve_seconds must be a finite number"),
    ],
)
def test_plan_rejects_bad_fields(kwargs, message):
    fields = {"problem": PROBLEM, "orders": ONE_F_ONE_B, "source": "x", **kwargs}
    with pytest.raises(PlanFormatError, match=message):
        Plan(**fields)


def test_a_plan_of_something_else_than_a_problem_is_an_argument_error():
    """An argument of the wrong type is an ArgumentError (docs/python.md); it was a PlanFormatError,
    which names a malformed plan file (a reviewer's)."""
    with pytest.raises(ArgumentError, match=r"^a plan needs a Problem, got dict$"):
        Plan(problem={"p": 1}, orders=ONE_F_ONE_B, source="x")


def test_numpy_strings_become_plain_ones():
    """``np.str_`` passed the checks (a str subclass) and stayed: reprs read ``np.str_('looped')``."""
    np = pytest.importorskip("numpy")
    problem = Problem(p=2, m=2, placement=np.str_("looped"))
    plan = Plan(problem=problem, orders=ONE_F_ONE_B, source=np.str_("x"), status=np.str_("heuristic"),
                objective=np.str_("makespan"))
    assert type(problem.placement) is str and repr(problem) == repr(PROBLEM)
    assert all(type(getattr(plan, f)) is str for f in ("source", "status", "objective"))


def test_validate_of_a_plan_checks_its_claimed_bound_as_a_plan_file_is_checked():
    """A Plan claiming optimal with a bound above a fitting textbook schedule passed validate() (0
    errors, gap 0), where save_plan and load_plan refused it."""
    problem = Problem(p=2, m=4)
    plain = baseline_plan("1f1b", problem)  # 14; zb-h1 fits at 13
    claimed = Plan(problem=problem, orders=plain.orders, source="edited", status="optimal", lower_bound=14)
    assert validate(claimed) == ["lower_bound 14 exceeds the zb-h1 schedule's 13 on the same problem: the "
                                 "bound is false"]
    assert validate(plain) == [] and validate(problem, claimed.orders) == []
