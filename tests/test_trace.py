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
from schedc.trace import US_PER_UNIT, trace_dict, write_trace
from tests.strategies import problems_with_orders


def test_events_carry_names_tracks_and_scaled_times(tmp_path):
    plan = baseline_plan("1f1b", Problem(p=3, m=4, tf="1/2", tb="1/3", tw="1/4", comm="1/6"))
    write_trace(plan, str(tmp_path / "t.json"))
    data = json.loads((tmp_path / "t.json").read_text())
    events = data["traceEvents"]
    names = {e["tid"]: e["args"]["name"] for e in events if e["name"] == "thread_name"}
    assert names == {0: "rank 0", 1: "rank 1", 2: "rank 2"}
    actions = [e for e in events if e["ph"] == "X"]
    assert len(actions) == plan.problem.num_tasks
    for r, slots in enumerate(plan.timeline.slots):
        track = [e for e in actions if e["tid"] == r]
        assert [e["args"]["token"] for e in track] == [str(s.action) for s in slots]
        for e, s in zip(track, slots, strict=True):
            assert e["name"] == f"{s.action.kind}{s.action.mb}"
            assert (e["args"]["stage"], e["args"]["mb"]) == (s.action.stage, s.action.mb)
            assert e["ts"] == float(s.start * US_PER_UNIT)
            assert e["dur"] == float((s.end - s.start) * US_PER_UNIT)
            assert Fraction(str(e["args"]["start"])) == s.start  # exact time kept beside the float
    assert data["otherData"]["us_per_cost_unit"] == US_PER_UNIT


def test_a_failed_trace_leaves_no_file(tmp_path, monkeypatch):
    def fail(*_):
        raise OverflowError("too large")
    monkeypatch.setattr(trace, "trace_dict", fail)
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
        track = [e for e in events if e["ph"] == "X" and e["tid"] == r]
        assert all(a["ts"] + a["dur"] <= b["ts"] + 1e-6 for a, b in pairwise(track))
        levels = [e["args"]["activation"] for e in events if e["name"] == f"rank {r} activation"]
        assert max(levels) == float(plan.timeline.peak_mem[r])


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


def test_mem_delta_of_an_unknown_kind_is_a_problem_error():
    with pytest.raises(ProblemError, match="no task kind 'x': the kinds are F/I/W/B"):
        Problem(p=2, m=2).mem_delta("x")
