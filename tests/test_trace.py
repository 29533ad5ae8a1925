# sed -i '88s/max(critical_path(problem), rank_bound(problem))/critical_path(problem)/' schedc/trace.py
"""Chrome trace export: one track per rank, one X event per action, scaled simulator times."""

from __future__ import annotations

import json
from fractions import Fraction
from itertools import pairwise

import pytest
from hypothesis import given, settings

from schedc import trace
from schedc.baselines import baseline_plan
from schedc.errors import ProblemError, SchedcError
from schedc.plan import Plan
from schedc.problem import Problem
from schedc.trace import FIRST_TID, MAX_NS, US_PER_UNIT, trace_dict, trace_events, trace_text, write_trace
from tests.strategies import problems_with_orders


def test_events_carry_names_tracks_and_scaled_times(tmp_path):
    plan = baseline_plan("1f1b", Problem(p=3, m=4, tf="1/2", tb="1/3", tw="1/4", comm="1/6"))
    write_trace(plan, str(tmp_path / "t.json"))
    data = json.loads((tmp_path / "t.json").read_text())
    events = data["traceEvents"]
    names = {e["tid"]: e["args"]["name"] for e in events if e["name"] == "thread_name"}
    assert names == {2: "rank 0", 3: "rank 1", 4: "rank 2"}  # no tid 0, nor the pid's 1
    actions = [e for e in events if e["ph"] == "X"]
    assert len(actions) == plan.problem.num_tasks
    for r, slots in enumerate(plan.timeline.slots):
        track = [e for e in actions if e["tid"] == FIRST_TID + r]
        assert [e["args"]["token"] for e in track] == [str(s.action) for s in slots]
        for e, s in zip(track, slots, strict=True):
            assert e["name"] == f"{s.action.kind}{s.action.mb}"
            assert (e["args"]["stage"], e["args"]["mb"]) == (s.action.stage, s.action.mb)
            start, end = (round(t * US_PER_UNIT * 1000) for t in (s.start, s.end))  # whole ns
            assert e["ts"] == start / 1000 and e["dur"] == (end - start) / 1000
            assert Fraction(str(e["args"]["start"])) == s.start  # exact time kept beside the float
    assert data["otherData"]["us_per_cost_unit"] == US_PER_UNIT


def test_a_rank_s_stages_are_told_apart_by_their_chunk_letter():
    """With v = 2 both of a rank's stages were named ``F0``; the stage was only in the args."""
    plan = baseline_plan("zb-v", Problem(p=2, m=2, v=2, placement="vshape"))
    names = {(e["tid"], e["args"]["stage"], e["args"]["mb"], e["cat"]): e["name"]
             for e in trace_dict(plan)["traceEvents"] if e["ph"] == "X"}
    assert names[(2, 0, 1, "F")] == "F1a" and names[(2, 3, 1, "F")] == "F1b"
    assert names[(3, 1, 0, "W")] == "W0a" and names[(3, 2, 0, "W")] == "W0b"


def test_a_failed_trace_leaves_no_file(tmp_path, monkeypatch):
    def fail(*_):
        raise OverflowError("too large")
    monkeypatch.setattr(trace, "_rank_events", fail)  # raised while rendering
    with pytest.raises(OverflowError):
        write_trace(baseline_plan("1f1b", Problem(p=2, m=2)), str(tmp_path / "t.json"))
    assert not (tmp_path / "t.json").exists()


@settings(max_examples=25, deadline=None)
@given(problems_with_orders(max_p=4, max_m=6))
def test_tracks_never_overlap_and_memory_counters_match_the_peak(case):
    problem, orders = case  # any deadlock-free order, idle gaps and interleavings included
    plan = Plan(problem=problem, orders=orders, source="test")
    events = trace_dict(plan)["traceEvents"]
    json.dumps(events)  # serialisable: no Fractions left
    for r in range(problem.p):
        track = [e for e in events if e["ph"] == "X" and e["tid"] == FIRST_TID + r]
        ns = [(round(e["ts"] * 1000), round(e["dur"] * 1000)) for e in track]  # as Perfetto reads them
        assert all(ts + dur <= next_ts for (ts, dur), (next_ts, _) in pairwise(ns))
        levels = [e["args"]["activation"] for e in events if e["ph"] == "C" and e["name"] == f"rank {r}"]
        assert max(levels) == float(plan.timeline.peak_mem[r])


def test_memory_counters_use_the_events_scale():
    """At --trace-unit 1 (one microsecond a cost unit) the counters change where the actions start
    and end, within the makespan, as at the default scale."""
    plan = baseline_plan("1f1b", Problem(p=2, m=2))
    events = trace_dict(plan, 1)["traceEvents"]
    actions = [e for e in events if e["ph"] == "X"]
    ends = {e["ts"] for e in actions} | {e["ts"] + e["dur"] for e in actions}
    counters = [e["ts"] for e in events if e["ph"] == "C"]
    assert counters and set(counters) <= ends and max(counters) <= float(plan.makespan)


@pytest.mark.parametrize("scale, message", [
    (-1, "must be at least 1e-100, got -1"), (0, "must be at least 1e-100, got 0"),
    ("1e-400", "must be at least 1e-100"),  # the times would underflow to zeros
    (float("inf"), "must be finite"),
    ("x", "must be a number"),
])
def test_a_bad_scale_is_one_line_not_negative_durations_or_a_python_error(scale, message):
    plan = baseline_plan("1f1b", Problem(p=2, m=2))
    with pytest.raises(SchedcError, match=message):
        trace.trace_dict(plan, scale)


def test_back_to_back_tasks_meet_on_the_nanosecond_grid():
    """tf = 2/3 at 1000 us per unit: F1 ended at 1333.334 us (666.667 + 666.667) and I0 started at
    1333.333 when start and duration were rounded apart; Perfetto then nests them wrongly."""
    plan = baseline_plan("gpipe", Problem(p=1, m=2, tf=Fraction(2, 3)))
    track = [e for e in trace_dict(plan)["traceEvents"] if e["ph"] == "X"]
    assert [(e["name"], e["ts"], e["dur"]) for e in track[:3]] == [
        ("F0", 0.0, 666.667), ("F1", 666.667, 666.666), ("I0", 1333.333, 1000.0)]


@pytest.mark.parametrize("costs, unit, message", [
    (dict(tf="1e-400", tb="1e-400", tw="1e-400"), 1000,
     "shortest task, about 1e-400, as nothing (under a nanosecond): no unit up to 1e100 holds it (it "
     "needs about 1e397): costs too small for a trace"),
    ({}, "1e-5", "give a unit (--trace-unit; write_trace's scale=) of at least 0.001 and at most 1.4e+11"),
    ({}, "1e100", "the trace would run past 2**50 nanoseconds"),
    (dict(tf="1e-20", tb="1e20"), 1000, "no unit holds both its shortest task and its length"),
])
def test_plans_the_nanosecond_grid_cannot_hold_are_refused_naming_the_units_that_fit(costs, unit, message):
    with pytest.raises(ProblemError, match=r"^at .* microseconds per cost unit the trace would") as err:
        trace_dict(baseline_plan("gpipe", Problem(p=2, m=2, **costs)), unit)
    assert message in str(err.value)


def test_mem_delta_of_an_unknown_kind_is_a_problem_error():
    with pytest.raises(ProblemError, match="no task kind 'x': the kinds are F/I/W/B"):
        Problem(p=2, m=2).mem_delta("x")


def test_solve_refuses_a_trace_of_tasks_too_short_for_it_before_searching(capsys, monkeypatch):
    import schedc.solvers
    from tests.cli_helpers import run

    monkeypatch.setattr(schedc.solvers, "solve", lambda *_, **__: pytest.fail("searched"))
    code, out, err = run(capsys, "solve", "--p", "2", "--m", "2", "--tw", "1e-7", "--trace", "t.json")
    assert code == 1 and out == "" and "shortest task, 1e-07, as nothing" in err


def test_solve_refuses_a_unit_no_plan_fits_before_searching(capsys, monkeypatch):
    """A unit that stretches the problem's floor past the grid fits no plan: it was refused only
    after the search, whose plan (and -o) was then lost (p=16 m=64 cap 6, 10 s). The floor is the
    busiest rank's work, 8 x 3 plus the warm-up, 27: one microbatch's chain (9) let 1e11 through."""
    import schedc.solvers
    from tests.cli_helpers import run

    monkeypatch.setattr(schedc.solvers, "solve", lambda *_, **__: pytest.fail("searched"))
    code, out, err = run(capsys, "solve", "--p", "4", "--m", "8", "--trace", "t.json", "--trace-unit", "1e11")
    assert code == 1 and out == "" and err.startswith(
        "schedc: error: at 100000000000 microseconds per cost unit the trace would run past 2**50 "
        "nanoseconds")
    assert err.endswith("at most 4.16e+10 (no plan is shorter than 27; a plan's own length allows less)\n")


@pytest.mark.parametrize("flags", [["--tf", "1e-90", "--trace-unit", "1e10"],
                                   ["--tf", "1e-30", "--tb", "1e20"]])
def test_before_any_plan_a_grid_no_unit_fits_is_named_as_such(capsys, tmp_path, flags):
    """Checked before the plan is built, without its makespan, the advice was "a unit of at least
    1e+87", which then failed on the plan's length: the problem's floor already rules it out."""
    from tests.cli_helpers import run

    code, out, err = run(capsys, "baseline", "zb-h1", "--p", "2", "--m", "4", *flags, "--trace",
                         str(tmp_path / "t.json"))
    assert code == 1 and out == "" and err.endswith("no unit holds both its shortest task and its length "
                                                    "(costs too far apart for a trace)\n")


def test_every_task_the_grid_accepts_lasts_at_least_a_nanosecond():
    """At half a nanosecond per task, rounding both ends wrote 9 of 18 tasks with duration 0."""
    plan = baseline_plan("1f1b", Problem(p=2, m=3))
    with pytest.raises(ProblemError, match="under a nanosecond"):
        trace_dict(plan, Fraction(1, 2000))
    tasks = [e for e in trace_dict(plan, Fraction(1, 1000))["traceEvents"] if e["ph"] == "X"]
    assert len(tasks) == plan.problem.num_tasks and all(round(e["dur"] * 1000) == 1 for e in tasks)


def test_the_recorded_scale_is_the_one_the_events_use():
    """trace_dict wrote Fraction(scale) from the raw argument: a numpy float raised Python's own
    TypeError, and 0.1 was recorded as its binary fraction while the events used 1/10."""
    import numpy as np

    from schedc.trace import trace_dict

    plan = baseline_plan("1f1b", Problem(p=2, m=2))
    assert trace_dict(plan, 0.1)["otherData"]["us_per_cost_unit"] == "1/10"
    assert trace_dict(plan, np.float32(0.5))["otherData"]["us_per_cost_unit"] == "1/2"


def test_every_event_keeps_its_exact_start_and_end_and_the_file_the_makespan():
    """The exact numbers a reader takes as schedc's (ts and dur are rounded to the nanosecond grid);
    ZB-H2's makespan exceeds its largest span, so the file's makespan is told apart from the span."""
    plan = baseline_plan("zb-h2", Problem(p=3, m=6, tf="1/2", tb="1/3", tw="1/4"))
    assert plan.makespan != plan.timeline.max_span
    data = json.loads(trace_text(plan))
    actions = [e for e in data["traceEvents"] if e["ph"] == "X"]
    for r, slots in enumerate(plan.timeline.slots):
        track = [e for e in actions if e["tid"] == FIRST_TID + r]
        for e, s in zip(track, slots, strict=True):
            assert (Fraction(str(e["args"]["start"])), Fraction(str(e["args"]["end"]))) == (s.start, s.end)
    assert Fraction(str(data["otherData"]["makespan"])) == plan.makespan


def test_tracks_sort_by_rank_and_the_process_names_the_plan_source():
    """Without sort indices Perfetto orders tracks as it likes; without the source, two traces
    opened side by side cannot be told apart."""
    plan = baseline_plan("1f1b", Problem(p=3, m=3))
    events = trace_dict(plan)["traceEvents"]
    sort = {e["tid"]: e["args"]["sort_index"] for e in events if e["name"] == "thread_sort_index"}
    assert sort == {2: 0, 3: 1, 4: 2}
    [process] = [e for e in events if e["name"] == "process_name"]
    assert process["args"]["name"] == "schedc 1f1b"
    assert "displayTimeUnit" not in trace_dict(plan)  # "ms", the default, was misread by old Perfetto


def test_a_plan_ending_exactly_on_the_last_nanosecond_fits_the_grid():
    plan = baseline_plan("1f1b", Problem(p=2, m=2))
    unit = Fraction(MAX_NS, 1000) / plan.makespan  # microseconds per cost unit: the end lands on MAX_NS
    ends = [e["ts"] + e["dur"] for e in trace_events(plan, unit) if e["ph"] == "X"]
    assert max(ends) * 1000 == MAX_NS
    with pytest.raises(ProblemError, match=r"past 2\*\*50 nanoseconds"):
        trace_events(plan, unit * (1 + Fraction(1, MAX_NS)))


def test_a_plan_no_unit_fits_is_told_so_not_given_an_empty_range():
    """Once the plan is known the advice weighs its length, not one microbatch's chain: otherwise it
    advised "a unit of at least 1e+09 and at most 2.8e+08"."""
    plan = baseline_plan("gpipe", Problem(p=1, m=2000, tf=1, tb=1, tw="1/1000000000000"))
    with pytest.raises(ProblemError, match="no unit holds both its shortest task and its length") as err:
        trace_events(plan)
    assert "at least" not in str(err.value)



@settings(max_examples=25, deadline=None)
@given(problems_with_orders(max_p=3, max_m=4))
def test_the_text_written_an_event_at_a_time_is_the_whole_dicts_json(case):
    """trace_text joins each event's JSON (holding a million dicts took gigabytes): the same bytes."""
    problem, orders = case
    plan = Plan(problem=problem, orders=orders, source="test")
    for scale in (US_PER_UNIT, Fraction(1, 7)):
        assert trace_text(plan, scale) == json.dumps(trace_dict(plan, scale)) + "\n"
