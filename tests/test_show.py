"""The text timeline: exact cell positions, the seed tables, width fitting and compression."""

from __future__ import annotations

import re
from fractions import Fraction

from hypothesis import given, settings
from hypothesis import strategies as st

from schedc.actions import Action
from schedc.baselines import baseline_plan
from schedc.plan import Plan
from schedc.problem import Problem
from schedc.show import label, quantum, render_timeline
from tests.strategies import problems, problems_with_orders

SEED = Problem(p=2, m=4, split=False, tb=1, tw=0)


def layerwise_orders(problem: Problem) -> tuple[tuple[Action, ...], ...]:
    """A valid order for any placement: each rank runs all forwards of its stages in layer order,
    then all backwards in reverse layer order (GPipe, stage by stage)."""
    back = ["I", "W"] if problem.split else ["B"]
    orders = []
    for stages in problem.rank_stages:
        order = [Action("F", s, i) for s in stages for i in range(problem.m)]
        order += [Action(k, s, i) for s in reversed(stages) for i in range(problem.m) for k in back]
        orders.append(tuple(order))
    return tuple(orders)


def test_seed_tables_match_the_papers():
    """GPipe's backwards in PyTorch's microbatch order; the papers draw them in reverse, the same
    times relabelled."""
    assert render_timeline(baseline_plan("gpipe", SEED), 80)[1:] == [
        "r0 F0 F1 F2 F3 __ __ B0 B1 B2 B3",
        "r1 __ F0 F1 F2 F3 B0 B1 B2 B3 __",
    ]
    lines = render_timeline(baseline_plan("1f1b", SEED), 80)
    assert lines[0].split() == [str(t) for t in range(10)]  # the time ruler
    assert lines[1:] == [
        "r0 F0 F1 __ B0 F2 B1 F3 B2 __ B3",
        "r1 __ F0 B0 F1 B1 F2 B2 F3 B3 __",
    ]


def test_quantum_divides_every_fractional_time():
    problem = Problem(p=3, m=3, tf="1/2", tb="1/3", tw="1/4", comm="1/6")
    timeline = baseline_plan("1f1b", problem).timeline
    q = quantum(timeline)
    assert q == Fraction(1, 12)
    for rank in timeline.slots:
        for slot in rank:
            assert (slot.start / q).denominator == 1 and (slot.end / q).denominator == 1


def test_long_actions_continue_and_chunks_get_letters():
    problem = Problem(p=2, m=2, v=2, placement="vshape", tf=2, tb=2, tw=2)
    plan = Plan(problem=problem, orders=layerwise_orders(problem), source="test")
    lines = render_timeline(plan, 500)
    # one stage costs 2/2 = 1 = one cell; rank 0's second stage waits for rank 1's two stages
    assert lines[1].startswith("r0 F0a F1a ___ ___ F0b F1b I0b W0b I1b W1b")
    assert label(problem, Action("I", 3, 1)) == "I1b"  # stage 3 is rank 0's second chunk under vshape
    assert any("chunks:" in line for line in lines)
    slow_forward = Problem(p=1, m=2, tf=3)
    wide = Plan(problem=slow_forward, orders=layerwise_orders(slow_forward), source="test")
    assert render_timeline(wide, 200)[1] == "r0 F0------ F1------ I0 W0 I1 W1"


@settings(max_examples=40, deadline=None)
@given(problems_with_orders(max_p=4, max_m=5))
def test_label_mode_places_every_action_at_its_exact_start(case):
    """With room enough, each action's label sits at cell (start - t0) / q and spans its cells
    (a zero-length W, tw = 0, has no cell: ``test_zero_length_actions_take_no_cell``)."""
    problem, orders = case  # any deadlock-free order, idle gaps included
    plan = Plan(problem=problem, orders=orders, source="test")
    timeline, q = plan.timeline, quantum(plan.timeline)
    cw = max(len(label(problem, s.action)) for rank in timeline.slots for s in rank)
    width = 3 + int(timeline.makespan / q) * (cw + 1)
    lines = render_timeline(plan, width)
    for r, slots in enumerate(timeline.slots):
        row = lines[1 + r][3:]
        for slot in (s for s in slots if s.end > s.start):
            at = int((slot.start - timeline.start) / q) * (cw + 1)
            cells = int((slot.end - slot.start) / q)
            text = row[at: at + cells * (cw + 1) - 1]
            assert text.rstrip("-") == label(problem, slot.action)


@settings(max_examples=40, deadline=None)
@given(problems(max_p=6, max_m=12), st.integers(20, 120))
def test_every_line_fits_the_width(problem, width):
    plan = Plan(problem=problem, orders=layerwise_orders(problem), source="test")
    lines = render_timeline(plan, width)
    rows = lines[1: 1 + problem.p]
    assert all(line.startswith(f"r{r}") for r, line in enumerate(rows))
    assert len({len(line) for line in rows}) == 1
    assert all(len(line) <= width for line in lines[: 1 + problem.p])


def test_compression_keeps_busy_and_idle_where_they_are():
    plan = baseline_plan("gpipe", Problem(p=4, m=24))
    lines = render_timeline(plan, 60)
    assert "1 column = 2 time units" in lines[-1]
    # rank 3 starts after 3 units of idle: column 0 is idle and column 1 half busy (counted as busy)
    assert lines[4].startswith("r3 _F")
    assert lines[1].startswith("r0 " + "F" * 12)  # 24 one-unit forwards in 12 two-unit columns


def test_a_compressed_column_names_its_time_and_the_last_partial_one_keeps_its_work():
    """The note's unit is singular only for exactly one time unit a column (half-unit cells two to a
    column); gpipe's last column on p=4 m=25 spans 1 unit of 5, busy on rank 0 to the makespan, so it
    shows that work, judged against its own length, not as idle against a full column."""
    half = Problem(p=2, m=3, tf=Fraction(1, 2), tb=Fraction(1, 2), split=False)
    assert render_timeline(baseline_plan("gpipe", half), 12)[-1].startswith("(1 column = 1 time unit;")
    assert render_timeline(baseline_plan("gpipe", half), 20)[-1].startswith("(1 column = 0.5 time units;")
    lines = render_timeline(baseline_plan("gpipe", Problem(p=4, m=25)), 20)
    assert "1 column = 5 time units" in lines[-1] and lines[1].endswith("W")


def test_labels_show_at_exactly_the_width_they_need_and_ruler_labels_never_touch():
    """1f1b on p=2 m=8 unsplit: 27 cells of two-character labels take 3 + 27 * 3 - 1 = 83 columns,
    so 83 shows the labels and 82 compresses; the ruler leaves at least two spaces between labels
    (one space read 10 11 12 as one number)."""
    plan = baseline_plan("1f1b", Problem(p=2, m=8, split=False))
    cells = int(plan.makespan)
    exact = render_timeline(plan, 3 + cells * 3 - 1)
    assert "F2" in exact[1] and not any("1 column" in line for line in exact)
    assert "1 column" in render_timeline(plan, 3 + cells * 3 - 2)[-1]
    assert re.search(r"\S \S", exact[0]) is None


def test_huge_times_fit_the_width():
    """Cell counts beyond a float's 53 bits: the column count is an exact integer ceiling."""
    plan = baseline_plan("1f1b", Problem(p=2, m=4, tf=10**20 + 1))
    lines = render_timeline(plan, 80)
    rows = lines[1:3]
    assert len({len(row) for row in rows}) == 1 and all(len(line) <= 80 for line in lines[:3])
    assert rows[0].startswith("r0 F0")


def test_zero_length_actions_take_no_cell():
    """With tw = 0 each W has no duration: drawing it would shift every later action right."""
    plan = baseline_plan("1f1b", Problem(p=2, m=2, tw=0))
    lines = render_timeline(plan, 200)
    timeline, q = plan.timeline, quantum(plan.timeline)
    for r, slots in enumerate(timeline.slots):
        row = lines[1 + r][3:].split(" ")
        assert len(row) == int(timeline.makespan / q)
        for slot in slots:
            if slot.end > slot.start:
                assert row[int((slot.start - timeline.start) / q)] == label(plan.problem, slot.action)


def test_chunks_past_z_get_two_letters_not_chunk_0s():
    """v = 27: stage 26 of rank 0 was drawn as F0a, the label of stage 0."""
    problem = Problem(p=1, m=1, v=27, split=False)
    assert [label(problem, Action("F", s, 0)) for s in (0, 25, 26)] == ["F0a", "F0z", "F0aa"]


def test_zero_length_actions_are_named_in_a_note():
    """No cell shows a W of tw = 0, so a note says how many the plan has (else they look absent)."""
    plan = baseline_plan("zb-h1", Problem(p=2, m=2, tw=0))
    assert "(4 W of zero length take no cell)" in render_timeline(plan, 200)
    with_w = baseline_plan("zb-h1", Problem(p=2, m=2))
    assert not any("zero length" in line for line in render_timeline(with_w, 200))
