"""What a progress line reports (solvers.progress): for spans the floor solve holds, not a backend's own
span bound, which holds for plans in microbatch index order only (span_bound.py), so that a line never
prints a bound the final plan does not carry."""

from __future__ import annotations

from fractions import Fraction as F

from schedc.solvers.progress import Progress, bounds_capped


def test_a_span_line_reports_the_floor_not_the_backends_bound():
    seen: list[Progress] = []
    capped = bounds_capped(seen.append, "span", F(5))
    capped(Progress(F(10), F(8), 1.0, "cp-sat"))  # CP-SAT's index-order bound, above the floor
    capped(Progress(F(4), F(4), 2.0, "lns"))  # a plan below the floor: the bound is the plan's value
    capped(Progress(F(9), F(3), 3.0, "cp-sat"))  # a bound under the floor: still the floor, not 3
    assert [(e.best, e.bound, e.elapsed, e.source) for e in seen] == [(10, 5, 1.0, "cp-sat"),
                                                                      (4, 4, 2.0, "lns"),
                                                                      (9, 5, 3.0, "cp-sat")]


def test_a_makespan_line_keeps_the_backends_bound():
    seen: list[Progress] = []
    assert bounds_capped(None, "span", F(5)) is None
    bounds_capped(seen.append, "makespan", F(5))(Progress(F(10), F(8), 1.0))
    assert [(e.best, e.bound) for e in seen] == [(10, 8)]

