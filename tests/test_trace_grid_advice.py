# sed -i '155s/if scale < MIN_US_PER_UNIT:/if scale <= MIN_US_PER_UNIT:/' schedc/trace.py
# sed -i '176s/if path != args.trace or not built:/if path != args.trace:/' schedc/cli_outputs.py
# sed -i '118s/_size(least, ROUND_CEILING, digits)/_size(least, None, digits)/' schedc/trace.py
# sed -i '176s/if path != args.trace or not built:/if True:/' schedc/cli_outputs.py
# sed -i '119s/_size(most, ROUND_FLOOR, digits)/_size(most, None, digits)/' schedc/trace.py
# sed -i '112s/least > ceiling/least >= ceiling/' schedc/trace.py
# sed -i '67s/max(Fraction/min(Fraction/' schedc/trace.py
"""The advice of a refused trace unit: it says no unit fits exactly when none does."""

from __future__ import annotations

from fractions import Fraction

import pytest

from schedc.baselines import baseline_plan
from schedc.errors import ArgumentError, ProblemError
from schedc.plan import Plan
from schedc.problem import Problem
from schedc.trace import MAX_NS, MIN_US_PER_UNIT, check_trace_grid, trace_events, write_trace


def test_before_a_plan_a_split_chain_counts_the_input_gradient_not_the_weight_one() -> None:
    """Split, one stage: tf = tw = 1 and tb = 2e15. The shortest task needs at least 0.001 us per
    unit, and then one microbatch's F and I alone last (1 + 2e15) * 0.001 us = 2e15 ns > 2**50 ns,
    so no unit fits. Counting F and W (2 units) as the chain advised "a unit of at least 0.001"."""
    problem = Problem(p=1, m=1, tf=1, tb=2 * 10**15, tw=1)
    assert MAX_NS < 1 + 2 * 10**15  # the F + I chain in ns at 0.001 us (1 ns) per unit
    with pytest.raises(ProblemError) as err:
        check_trace_grid(problem, Fraction(1, 10000))
    assert str(err.value).endswith("no unit holds both its shortest task and its length (costs too far "
                                   "apart for a trace)")
    plan = Plan(problem=problem, orders=(("0F0", "0I0", "0W0"),), source="hand")
    with pytest.raises(ProblemError, match=r"past 2\*\*50 nanoseconds"):
        trace_events(plan, Fraction(1, 1000))  # the least unit the shortest task allows


def test_a_unit_both_ends_of_the_range_allow_is_advised_not_ruled_out() -> None:
    """tf = 1 and a makespan of exactly 2**50 units: 0.001 us per unit shows the 1-unit F as one
    nanosecond and ends the plan on the last nanosecond (both allowed), so the advice for a smaller
    unit is that one unit, not "no unit holds both" (least == ceiling read as an empty range)."""
    problem = Problem(p=1, m=1, split=False, tf=1, tb=2**50 - 1, tw=0)
    plan = Plan(problem=problem, orders=(("0F0", "0B0"),), source="hand")
    assert plan.makespan == 2**50
    ends = [e["ts"] + e["dur"] for e in trace_events(plan, Fraction(1, 1000)) if e["ph"] == "X"]
    assert max(ends) * 1000 == MAX_NS
    with pytest.raises(ProblemError) as err:
        trace_events(plan, Fraction(1, 10000))
    assert str(err.value).endswith("give a unit (--trace-unit; write_trace's scale=) of at least 0.001 and "
                                   "at most 0.001")


def test_the_advised_least_unit_is_never_below_the_least_the_option_takes() -> None:
    """Costs of 1e99 need a unit of at least 1e-102 for their shortest task, but --trace-unit takes
    1e-100 or more: the advice said "at least 1e-102", which the option then refused."""
    problem = Problem(p=2, m=3, tf="1e99", tb="2e99", tw="1e99")
    with pytest.raises(ProblemError) as err:
        check_trace_grid(problem, Fraction(1000))
    assert "give a unit (--trace-unit; write_trace's scale=) of at least 1e-100 and at most" in str(err.value)
    check_trace_grid(problem, MIN_US_PER_UNIT)  # which then fits
    first = next(e for e in trace_events(baseline_plan("1f1b", problem), MIN_US_PER_UNIT) if e["ph"] == "X")
    assert first["dur"] == 1e-1  # 1e99 cost units of 1e-100 us each, as the option is advised to take


@pytest.mark.parametrize("scale", [None, [1], True, {"us": 1}])
def test_a_unit_of_the_wrong_type_is_an_argument_error(tmp_path, scale) -> None:
    """The README: an argument of the wrong type is an ArgumentError, also a TypeError (None was a
    ProblemError, as for a number out of range)."""
    plan = Plan(problem=Problem(p=1, m=1), orders=(("0F0", "0I0", "0W0"),), source="hand")
    with pytest.raises(ArgumentError, match="microseconds per cost unit must be a number"):
        write_trace(plan, str(tmp_path / "t.json"), scale)
    assert not (tmp_path / "t.json").exists()


def test_the_advised_units_are_accepted(tmp_path, capsys) -> None:
    """The advice rounds its least unit up and its most unit down: rounded to nearest, the tester's
    "at most 8.07e+10" (the true limit 8.0697e10) was refused when given back."""
    from tests.cli_helpers import run

    plan = str(tmp_path / "b.json")
    costs = ("--tf", "1/3", "--tb", "2/7")
    assert run(capsys, "baseline", "zb-h1", "--p", "4", "--m", "8", *costs, "-o", plan)[0] == 0
    code, _, err = run(capsys, "show", plan, "--trace", str(tmp_path / "t.json"), "--trace-unit", "1e100")
    least, most = err.split("of at least ")[1].split(";")[0].split(" and at most ")
    assert code == 1 and (least, most.strip()) == ("0.0035", "8.06e+10")
    for unit in (least, most.strip()):
        assert run(capsys, "show", plan, "--trace", str(tmp_path / "t.json"), "--trace-unit", unit)[0] == 0


def test_a_unit_the_solved_plan_rules_out_refuses_the_trace_alone(tmp_path, capsys) -> None:
    """Before the search the unit is checked against a floor only; the plan came out longer (72 under
    a cap of 1) and every output was lost with the search. The plan and CSV are now written."""
    from tests.cli_helpers import run

    out = {name: tmp_path / name for name in ("g.json", "g.csv", "g.trace.json")}
    files = ("-o", str(out["g.json"]), "--csv", str(out["g.csv"]), "--trace", str(out["g.trace.json"]))
    code, _, err = run(capsys, "solve", "--p", "4", "--m", "8", "--mem", "1", "--workers", "1", "--quiet",
                       *files, "--trace-unit", "2.25e10")
    assert code == 1 and len(err.splitlines()) == 1
    assert err.rstrip().endswith(f"the trace was not written; {out['g.json']}, {out['g.csv']} written")
    assert out["g.json"].exists() and out["g.csv"].exists() and not out["g.trace.json"].exists()


def test_the_least_unit_rounds_up_and_a_narrow_range_gets_more_digits(tmp_path, capsys) -> None:
    """The least unit of tf = 7/123456789 is 17,636.7: rounded to nearest, "1.76e+04" would be
    refused. A range narrower than 3 digits (the review's: at least 1/7000, at most 1.42881e-4) was
    advised as "at most 0.000142", below its own least."""
    from tests.cli_helpers import run

    trace = str(tmp_path / "t.json")
    code, _, err = run(capsys, "baseline", "zb-h1", "--p", "2", "--m", "2", "--tf", "7/123456789", "--trace",
                       trace, "--trace-unit", "1e-9")
    assert code == 1 and "of at least 1.77e+04 and at most" in err
    assert run(capsys, "baseline", "zb-h1", "--p", "2", "--m", "2", "--tf", "7/123456789", "--trace", trace,
               "--trace-unit", "1.77e+04")[0] == 0
    narrow = ("gpipe", "--p", "1", "--m", "1", "--tf", "7", "--tb", "7880000000000000", "--tw", "7")
    code, _, err = run(capsys, "baseline", *narrow, "--trace", trace, "--trace-unit", "1e-9")
    assert code == 1 and "of at least 1/7000 and at most 0.00014288 (" in err
    assert run(capsys, "baseline", *narrow, "--trace", trace, "--trace-unit", "0.00014288")[0] == 0


def test_show_writes_nothing_when_its_trace_unit_is_refused(tmp_path, capsys) -> None:
    """show checks a plan that exists: its outputs stay all-or-nothing (a review found the CSV written
    beside a refused trace)."""
    from tests.cli_helpers import run

    plan, csv = str(tmp_path / "a.json"), tmp_path / "b.csv"
    assert run(capsys, "baseline", "zb-h1", "--p", "4", "--m", "8", "-o", plan)[0] == 0
    code, _, err = run(capsys, "show", plan, "--csv", str(csv), "--trace", str(tmp_path / "t.json"),
                       "--trace-unit", "5e10")
    assert code == 1 and "the trace was not written" not in err and not csv.exists()
