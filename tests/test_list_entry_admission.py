"""The list scheduler's V-shape runs: rank 0 (first and last stage) with an admission of its own."""

from __future__ import annotations

from fractions import Fraction

import pytest

from schedc.errors import ProblemError
from schedc.problem import Problem
from schedc.solvers.admission import ADMISSIONS
from schedc.solvers.list_portfolio import VSHAPE_RUNS, Variant, variant_named, variants
from schedc.solvers.list_scheduler import RULES, best_list_result, run_variant
from schedc.validate import validate

SWEEP_VSHAPE = Problem(p=8, m=16, v=2, placement="vshape", tb=2, comm=Fraction(1, 2), mem=4)
"""The cap sweep's p=8 vshape mem=4 (optimum 121, proven in a 437 s solve)."""


def test_a_name_with_an_entry_admission_reads_back() -> None:
    variant = variant_named("lst/none/forecast:due/wait")
    assert variant == Variant("lst", "none", "due", wait=True, entry="forecast")
    assert str(variant) == "lst/none/forecast:due/wait"
    assert variant_named("zb/none/banker").entry is None
    assert all(variant_named(str(v)) == v for v in VSHAPE_RUNS)


def test_only_capped_v_shapes_get_the_runs() -> None:
    assert set(VSHAPE_RUNS) <= set(variants(SWEEP_VSHAPE))
    for other in (Problem(p=8, m=16, v=2, mem=4), Problem(p=8, m=16, v=2, placement="vshape")):
        assert not any(v.entry for v in variants(other))


@pytest.mark.parametrize("admission", ADMISSIONS)
def test_the_same_entry_admission_is_the_plain_variant(admission: str) -> None:
    plain = run_variant(SWEEP_VSHAPE, Variant("lst", "none", admission))
    same = run_variant(SWEEP_VSHAPE, Variant("lst", "none", admission, entry=admission))
    assert same.orders == plain.orders


def test_the_entry_admission_shortens_the_sweep_instance_and_stays_within_the_cap() -> None:
    """Every uniform variant (each rule, admission and waiting) ends at 133.5 or above here; rank 0
    admitting by forecast while the others admit by 'due' ends at 129."""
    uniform = min(run_variant(SWEEP_VSHAPE, Variant(rule, "none", admission, wait=wait)).makespan
                  for rule in RULES for admission in ADMISSIONS for wait in (False, True))
    best = best_list_result(SWEEP_VSHAPE)
    assert best.variant.entry is not None and best.makespan < uniform
    assert validate(SWEEP_VSHAPE, best.orders) == []


def test_an_unknown_entry_admission_is_a_one_line_error() -> None:
    with pytest.raises(ProblemError, match="unknown admission 'greedy'"):
        run_variant(SWEEP_VSHAPE, Variant("lst", "none", "due", entry="greedy"))
