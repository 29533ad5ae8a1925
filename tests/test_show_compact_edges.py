# sed -i '114s/len(text) <= run - c/len(text) < run - c/' schedc/show.py
# sed -i '127s/pos + len(text) <= width/pos + len(text) < width/' schedc/show.py
# sed -i '153s/max(width - prefix, 8)/max(width - prefix, 1)/' schedc/show.py
# sed -i '159s/-(-n \/\/ avail)/n \/\/ avail + 1/' schedc/show.py
"""Compact timelines at their boundaries, on one hand-checked plan: p=1, m=2, unsplit, tf=2, tb=3,
tw=0, run F0 F1 B0 B1 at 0-2, 2-4, 4-7, 7-10 (quantum 1, 10 cells). Its labels need 10 * 3 - 1 = 29
columns, so every width below 32 ("r0 " is 3) draws it compact."""

from __future__ import annotations

from schedc.plan import Plan
from schedc.problem import Problem
from schedc.show import render_timeline

PLAN = Plan(problem=Problem(p=1, m=2, split=False, tf=2, tb=3, tw=0), orders=(("0F0", "0F1", "0B0", "0B1"),),
            source="hand")


def test_a_run_exactly_as_wide_as_its_label_shows_the_label() -> None:
    """At one quantum a column (10 columns fit in 17), F0 and F1 own two columns each: "F0" fits
    exactly and is shown, not cut to its kind letter ("F-")."""
    lines = render_timeline(PLAN, 20)
    assert lines[1] == "r0 F0F1B0-B1-"


def test_a_ruler_label_ending_at_the_rows_edge_is_kept() -> None:
    """Ruler labels every third column (two spaces apart): 0, 3, 6 and 9; "9" sits in the last of the
    10 columns and ends exactly at the rows' width, so it is shown."""
    lines = render_timeline(PLAN, 20)
    assert lines[0] == "   0  3  6  9"
    assert len(lines[0]) == len(lines[1])


def test_a_narrow_width_still_gives_a_few_columns() -> None:
    """Width 4 leaves 1 column after "r0 ", but a timeline never gets fewer than 8: the smallest k
    with ceil(10 / k) <= 8 is 2, so 5 columns of 2 time units (not 1 column of 10)."""
    lines = render_timeline(PLAN, 4)
    assert len(lines[1]) == len("r0 ") + 5
    assert lines[-1].startswith("(1 column = 2 time units;")


def test_a_width_the_cells_divide_keeps_one_quantum_a_column() -> None:
    """Width 13 leaves exactly 10 columns for the 10 cells: k = 1 fits (the smallest k), where
    rounding the ceiling as n // avail + 1 doubled the column."""
    lines = render_timeline(PLAN, 13)
    assert lines[1] == "r0 F0F1B0-B1-"
    assert lines[-1].startswith("(1 column = 1 time unit;")
