"""Plan JSON: exact round trip, format version, malformed files, hand-edited times."""

from __future__ import annotations

import copy
import json
from dataclasses import replace
from fractions import Fraction as F

import pytest

from schedc import load_plan
from schedc.actions import Action
from schedc.baselines import baseline_plan
from schedc.errors import PlanFormatError, SchedcError, ScheduleError
from schedc.plan import Plan
from schedc.plan_json import VERSION, plan_from_dict, plan_to_dict, save_plan
from schedc.problem import Problem
from schedc.solvers.bounds import lower_bound
from schedc.solvers.incumbent import fitting_baselines


def orders(*ranks: str) -> tuple[tuple[Action, ...], ...]:
    return tuple(tuple(Action.parse(t) for t in rank.split()) for rank in ranks)


def rich_plan() -> Plan:
    """Fractional costs, per-stage overrides, mixed caps, a fractional bound: all must survive."""
    problem = Problem(
        p=2, m=2, v=2, placement="vshape", comm=F(1, 3), mem=(F(3, 2), None), w_mem=F(1, 4),
        stage_costs=((1, F(1, 2), 0), (F(2, 3), 1, 1), (1, 1, F(1, 7)), (F(5, 2), 1, 1)),
    )
    return Plan(
        problem=problem,
        orders=orders("0F0 3F0 0F1 3I0 3W0 3F1 3I1 0I0 3W1 0W0 0I1 0W1",
                      "1F0 2F0 1F1 2I0 2F1 1I0 2W0 2I1 1W0 1I1 2W1 1W1"),
        source="cp-sat", status="feasible", lower_bound=F(22, 7), objective="span", solve_seconds=1.25,
    )


def simple_plan() -> Plan:
    return Plan(problem=Problem(p=2, m=1), orders=orders("0F0 0I0 0W0", "1F0 1I0 1W0"), source="1f1b")


@pytest.mark.parametrize("make", [rich_plan, simple_plan])
def test_load_of_save_is_the_same_plan(tmp_path, make):
    plan = make()
    path = tmp_path / "plan.json"
    plan.save(str(path))
    loaded = load_plan(str(path))
    assert loaded == plan
    assert loaded.timeline == plan.timeline
    assert (loaded.lower_bound, loaded.solve_seconds) == (plan.lower_bound, plan.solve_seconds)
    save_plan(loaded, str(tmp_path / "again.json"))
    assert (tmp_path / "again.json").read_text() == path.read_text()


def test_file_records_the_replay():
    data = plan_to_dict(simple_plan())
    assert (data["format"], data["version"]) == ("schedc-plan", VERSION)
    assert data["makespan"] == 5
    assert data["ranks"][0] == [["0F0", 0, 1], ["0I0", 3, 4], ["0W0", 4, 5]]
    fractional = plan_to_dict(rich_plan())
    assert fractional["lower_bound"] == "22/7"
    assert fractional["problem"]["comm"] == "1/3"


def test_bare_tokens_load_and_get_the_replays_times():
    data = plan_to_dict(simple_plan())
    data["ranks"] = [["0F0", "0I0", "0W0"], ["1F0", "1I0", "1W0"]]
    del data["makespan"], data["peak_mem"]
    assert plan_from_dict(data) == simple_plan()


def _edited(change) -> dict:
    data = copy.deepcopy(plan_to_dict(simple_plan()))
    change(data)
    return data


def _set(path: tuple, value):
    def change(data):
        target = data
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value
    return change


def _drop(key):
    return lambda data: data.pop(key)


def _costs_only(costs):
    def change(data):
        for name in ("tf", "tb", "tw"):
            del data["problem"][name]
        data["problem"]["stage_costs"] = costs
    return change


MALFORMED = [
    (_set(("version",), 2), PlanFormatError, "plan format version 2, this schedc reads 1"),
    (_set(("version",), True), PlanFormatError, "plan format version True"),
    (_drop("version"), PlanFormatError, "plan format version None"),
    (_set(("format",), "other"), PlanFormatError, "not a schedc plan"),
    (_drop("ranks"), PlanFormatError, "missing field 'ranks'"),
    (_drop("source"), PlanFormatError, "missing field 'source'"),
    (_drop("problem"), PlanFormatError, "missing field 'problem'"),
    (_set(("ranks",), {"0": []}), PlanFormatError, "\"ranks\" must be a list"),
    (_set(("ranks", 1), 7), PlanFormatError, "rank 1: expected a list of actions"),
    (_set(("ranks", 0, 1), ["0I0", 3]), PlanFormatError,
     "rank 0 position 1: expected \\[token, start, end\\]"),
    (_set(("ranks", 0, 1), 5), PlanFormatError, "rank 0 position 1: expected"),
    (_set(("ranks", 0, 1), ["0X0", 3, 4]), PlanFormatError, "rank 0 position 1: unknown action token '0X0'"),
    (_set(("ranks", 0, 1), "I0"), PlanFormatError, "rank 0 position 1: unknown action token 'I0'"),
    (_set(("ranks", 0, 1), ["0I0", "soon", 4]), PlanFormatError,
     "rank 0 position 1 action 0I0 start must be"),
    (_set(("ranks", 0, 1), ["0I0", 3, None]), PlanFormatError, "rank 0 position 1 action 0I0 end must be"),
    (_set(("ranks", 0, 1), "0I0"), PlanFormatError, "give times for every action or for none"),
    (_set(("ranks", 0, 1), ["0I1", 3, 4]), ScheduleError, "rank 0 position 1 action 0I1: not a task"),
    (_set(("ranks",), [[["0F0", 0, 1]]]), ScheduleError, "plan has 1 rank, the problem has p = 2"),
    (_set(("problem",), [2, 1]), SchedcError, "a problem must be a table"),
    (_set(("problem", "p"), "two"), SchedcError, "plan.json: problem field p must be a positive integer"),
    (_set(("problem", "p"), 0), SchedcError, "problem field p must be a positive integer"),
    (_set(("problem", "placement"), "vshape"), SchedcError, "vshape placement needs v = 2"),
    (_set(("problem", "mem"), [1, 2, 3]), SchedcError, "problem field mem gives 3 caps for 2 ranks"),
    (_costs_only([[1, 1]]), SchedcError, "stage_costs\\[0\\] must be"),
    (_set(("source",), 3), PlanFormatError, "source must be a string"),
    (_set(("status",), "great"), PlanFormatError, "status must be one of"),
    (_set(("objective",), ["makespan"]), PlanFormatError, "objective must be one of"),
    (_set(("lower_bound",), "low"), PlanFormatError, "lower_bound must be a number"),
    (_set(("solve_seconds",), "1s"), PlanFormatError, "solve_seconds must be a finite number"),
    (_set(("solve_seconds",), -1.5), PlanFormatError, "solve_seconds must be a finite number >= 0, got -1.5"),
    (_set(("makespan",), "five"), PlanFormatError, "makespan must be a number"),
    (_set(("peak_mem",), {"a": 1}), PlanFormatError, "peak_mem must be a number"),
    (_set(("lower_bound",), 6), ScheduleError, "lower_bound 6 exceeds the plan's makespan 5"),
    (_set(("status",), "optimal"), ScheduleError, "status optimal needs lower_bound equal to the plan's "
                                                  "makespan 5, got None"),
    (_set(("ranks", 0, 0), ["1" * 5000 + "F0", 0, 1]), PlanFormatError, "has an index too long"),
    (_set(("ranks", 0, 0), ["1" * 4000 + "F0", 0, 1]), PlanFormatError, "has an index too long"),
    (_set(("problem", "mem"), [[1], [2]]), SchedcError, r"problem field mem\[0\] must be a number, got \[1"),
    (_set(("problem", "mem"), [2, 2, 2]), SchedcError, "problem field mem gives 3 caps for 2 ranks"),
]


@pytest.mark.parametrize("change, error, message", MALFORMED)
def test_malformed_plans_give_one_line_errors(tmp_path, change, error, message):
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(_edited(change)))
    with pytest.raises(error, match=message) as err:
        load_plan(str(path))
    assert str(err.value).startswith(f"{path}: ")
    assert "\n" not in str(err.value) and len(str(err.value)) < 200 + len(str(path))


def test_a_bound_above_the_value_is_kept_for_a_plan_over_the_cap():
    """A cap-aware bound holds for plans within the cap, so a plan over it may lie below its bound."""
    data = _edited(_set(("lower_bound",), 6))
    data["problem"]["mem"] = ["1/2", "1/2"]
    assert plan_from_dict(data).lower_bound == 6


def test_a_bound_equal_to_the_best_fitting_baseline_is_a_true_claim(tmp_path):
    """zb-h2 (19) is the best fitting schedule of this problem and its optimum at most; a bound of 19
    is tight, not false, and the plan round-trips (only a bound above a fitting schedule is refused)."""
    problem = Problem(p=2, m=4, tb=2, comm=1)
    plan = baseline_plan("zb-h2", problem)
    assert plan.value == min(b.value for b in fitting_baselines(problem)) > lower_bound(problem)
    path = tmp_path / "tight.json"
    save_plan(replace(plan, lower_bound=plan.value, status="optimal"), str(path))
    assert load_plan(str(path)).lower_bound == plan.value


def test_claims_that_no_solver_makes_are_caught():
    """A solver's plan always fits its cap, and its bound is never above a textbook schedule that
    fits: a plan file claiming otherwise was edited (here: its cap dropped after solving)."""
    plan = replace(baseline_plan("1f1b", Problem(p=2, m=4, mem=(2,))), lower_bound=F(9),
                   status="feasible")
    data = plan_to_dict(plan)
    data["problem"]["mem"] = ["3/2", "3/2"]
    with pytest.raises(ScheduleError, match="status feasible claims a solver's plan within the cap"):
        plan_from_dict(data)
    data = plan_to_dict(replace(plan, problem=Problem(p=2, m=4)))  # 1f1b's 14 claimed optimal: zb-h1 takes 13
    data["lower_bound"] = 14
    data["status"] = "optimal"
    with pytest.raises(ScheduleError, match="lower_bound 14 exceeds the zb-h1 schedule's 13 on the same"):
        plan_from_dict(data)


@pytest.mark.parametrize("data", [None, [], "plan", 3])
def test_non_objects_are_not_plans(data):
    with pytest.raises(PlanFormatError, match="not a schedc plan"):
        plan_from_dict(data)


@pytest.mark.parametrize(
    "change, message",
    [
        (_set(("ranks", 0, 1), ["0I0", 3, 5]), "rank 0 position 1 action 0I0: lasts 2, its cost is 1"),
        (_set(("ranks", 1, 0), ["1F0", 0, 1]),
         "rank 1 position 0 action 1F0: starts at 0 before its input 0F0"),
        (_set(("ranks", 0, 2), ["0W0", "7/2", "9/2"]),
         "rank 0 position 2 action 0W0: starts at 3.5, overlapping"),
        (_set(("ranks", 0, 2), ["0W0", 5, 6]),
         "rank 0 position 2 action 0W0: recorded at 5-6, the replay runs it"),
        (_set(("makespan",), 4), "recorded makespan 4 differs from the replay's 5"),
        (_set(("peak_mem",), [1, "1/2"]),
         "recorded peak_mem \\[1, '1/2'\\] differs from the replay's \\[1, 1\\]"),
    ],
)
def test_hand_edited_times_are_caught(tmp_path, change, message):
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(_edited(change)))
    with pytest.raises(ScheduleError, match=message):
        load_plan(str(path))


def test_shifted_but_consistent_times_are_caught():
    def shift(data):
        data["ranks"] = [[[a, s + 1, e + 1] for a, s, e in rank] for rank in data["ranks"]]
    message = "rank 0 position 0 action 0F0: recorded at 1-2, the replay runs it at 0-1"
    with pytest.raises(ScheduleError, match=message):
        plan_from_dict(_edited(shift))


def test_unreadable_files(tmp_path):
    with pytest.raises(PlanFormatError, match="cannot read plan"):
        load_plan(str(tmp_path / "missing.json"))
    with pytest.raises(PlanFormatError, match="cannot read plan"):
        load_plan(str(tmp_path))
    (tmp_path / "bad.json").write_text('{"format": "schedc-plan", ')
    with pytest.raises(PlanFormatError, match="is not valid JSON"):
        load_plan(str(tmp_path / "bad.json"))
    (tmp_path / "bin.json").write_bytes(b"\xff\xfe\x00\x81")
    with pytest.raises(PlanFormatError, match="is not UTF-8 text"):
        load_plan(str(tmp_path / "bin.json"))


def test_unwritable_path(tmp_path):
    with pytest.raises(PlanFormatError, match="cannot write plan"):
        simple_plan().save(str(tmp_path / "no" / "such" / "dir.json"))


def test_inputs_beyond_the_size_limit_are_refused_without_reading_them_whole(tmp_path, monkeypatch):
    """A path that never ends (/dev/zero) or a huge file: one line, whatever the reader."""
    import schedc.input_files as input_files
    from schedc.errors import ProblemError
    from schedc.problem_io import read_problem_file
    from schedc.torch_csv import read_csv_orders

    monkeypatch.setattr(input_files, "MAX_BYTES", 64)
    big = tmp_path / "big"
    big.write_text("x" * 65)
    with pytest.raises(PlanFormatError, match="larger than"):
        load_plan(str(big))
    with pytest.raises(ProblemError, match="larger than"):
        read_problem_file(str(big))
    with pytest.raises(PlanFormatError, match="larger than"):
        read_csv_orders(str(big), Problem(p=2, m=2))
    big.write_text("x" * 64)  # at the limit: read, and then judged on its content
    with pytest.raises(PlanFormatError, match="not valid JSON"):
        load_plan(str(big))


def test_save_plan_refuses_the_false_bound_load_plan_would_refuse(tmp_path):
    """A solved plan kept across a changed problem (its cap dropped) still claims its bound: Plan
    checks the bound against its own orders only, load_plan against the fitting baselines too."""
    plan = baseline_plan("1f1b", Problem(p=2, m=4))
    claimed = Plan(problem=plan.problem, orders=plan.orders, source="x", status="optimal",
                   lower_bound=plan.makespan)  # 14, where zb-h1 gives 13
    path = tmp_path / "p.json"
    with pytest.raises(ScheduleError, match="lower_bound 14 exceeds the zb-h1 schedule's 13"):
        save_plan(claimed, str(path))
    assert not path.exists()


@pytest.mark.parametrize("seconds", [1e300, 1e-320, 0.0])
def test_solve_seconds_that_a_float_holds_round_trip(tmp_path, seconds):
    import numpy as np

    plan = replace(baseline_plan("1f1b", Problem(p=2, m=4)), solve_seconds=seconds)
    save_plan(plan, str(tmp_path / "p.json"))
    assert load_plan(str(tmp_path / "p.json")) == plan
    for scalar in (np.float32(3), np.int64(3)):  # numpy's scalars are numbers too, kept as a float
        assert replace(plan, solve_seconds=scalar).solve_seconds == 3.0


def test_solve_seconds_that_underflow_to_zero_are_refused(tmp_path):
    data = plan_to_dict(baseline_plan("1f1b", Problem(p=2, m=4)))
    text = json.dumps(data).replace('"solve_seconds": null', '"solve_seconds": 1e-400')
    (tmp_path / "p.json").write_text(text)
    with pytest.raises(PlanFormatError, match="solve_seconds must be a finite number >= 0, got 1e-400"):
        load_plan(str(tmp_path / "p.json"))


def test_show_labels_a_bound_above_the_uncapped_one_as_holding_within_the_cap(tmp_path, capsys):
    """Such a bound counts the cap the plan breaks; one no higher than the uncapped analytic bound
    holds with or without it."""
    from schedc.cli import main

    data = _edited(_set(("lower_bound",), 6))
    data["problem"]["mem"] = ["1/2", "1/2"]
    path = tmp_path / "over.json"
    path.write_text(json.dumps(data))
    assert main(["show", str(path)]) == 0
    out = capsys.readouterr().out
    assert "does NOT fit the cap" in out and "lower bound 6 (for plans within the cap)" in out


@pytest.mark.parametrize("bound", [float("nan"), "abc"])
def test_a_bad_bound_is_a_plan_error_as_every_other_plan_field(bound):
    """It was a ProblemError, where every other bad Plan field (and the same bound read from a
    file) is a PlanFormatError."""
    plan = simple_plan()
    with pytest.raises(PlanFormatError, match="lower_bound"):
        Plan(problem=plan.problem, orders=plan.orders, source="hand", lower_bound=bound)


@pytest.mark.parametrize(("key", "value"), [("lower_bund", 6), ("zzz", 1)])
def test_an_unknown_field_is_refused_not_dropped(key, value):
    """A misspelt field was dropped silently: ``lower_bund`` read as a plan without a bound."""
    data = plan_to_dict(simple_plan())
    data[key] = value
    with pytest.raises(PlanFormatError) as err:
        plan_from_dict(data, "p.json")
    assert str(err.value).startswith(f"p.json: unknown plan field {key!r} (a plan has format, version, ")


@pytest.mark.parametrize("version", [1.0, "1", True, 2])
def test_the_version_is_the_integer_this_schedc_reads(version):
    data = plan_to_dict(simple_plan())
    data["version"] = version
    with pytest.raises(PlanFormatError, match=f"plan format version {version!r}, this schedc reads 1"):
        plan_from_dict(data)


def test_the_known_fields_are_those_a_plan_file_is_written_with():
    from schedc.plan_json import FIELDS

    assert set(plan_to_dict(simple_plan())) == set(FIELDS)


def test_a_span_bound_above_a_fitting_baselines_span_is_false(tmp_path):
    """A span plan's bound is checked against the fitting baselines' spans above the analytic span
    bound; with the makespan's bound (27, above the span bound 24) in its place, a bound of 25 on a
    span plan was saved and loaded although ZB-H2 runs every rank in 24."""
    problem = Problem(p=4, m=8)
    best = min(fitting_baselines(problem, "span"), key=lambda b: b.value)
    assert (best.source, best.value) == ("zb-h2", 24)
    gpipe = baseline_plan("gpipe", problem)
    with pytest.raises(ScheduleError, match="lower_bound 25 exceeds the zb-h2 schedule's 24"):
        save_plan(replace(gpipe, objective="span", lower_bound=25), str(tmp_path / "span.json"))
    data = plan_to_dict(replace(gpipe, objective="span"))
    data["lower_bound"] = 25
    with pytest.raises(ScheduleError, match="exceeds the zb-h2 schedule's 24"):
        plan_from_dict(data)
    data["lower_bound"] = 24  # the best fitting schedule's value: a true claim
    assert plan_from_dict(data).lower_bound == 24


def test_an_entry_with_more_than_start_and_end_is_refused(tmp_path):
    """A fourth element (a hand edit, another tool's field) was dropped silently."""
    data = plan_to_dict(baseline_plan("1f1b", Problem(p=2, m=2)))
    data["ranks"][0][0].append("note")
    path = tmp_path / "p.json"
    path.write_text(json.dumps(data))
    with pytest.raises(PlanFormatError, match=r"rank 0 position 0: expected \[token, start, end\]"):
        load_plan(str(path))


def test_a_plan_without_status_objective_or_bound_claims_nothing():
    """A hand-written plan without a status is "heuristic": "feasible" would claim a solver's plan."""
    data = plan_to_dict(baseline_plan("1f1b", Problem(p=2, m=2)))
    for key in ("status", "objective", "lower_bound", "solve_seconds"):
        del data[key]
    plan = plan_from_dict(data)
    assert (plan.status, plan.objective, plan.lower_bound, plan.solve_seconds) == (
        "heuristic", "makespan", None, None)



def test_a_plan_file_from_before_the_derived_means_loads_by_its_stage_costs(tmp_path, capsys):
    """Versions before 2026-11-30 wrote tf, tb, tw (their defaults) beside stage_costs in version-1
    plan files; reading them failed with "give one or the other", an edit the user never made."""
    from tests.cli_helpers import run

    problem = Problem(p=2, m=4, stage_costs=[(1, F(11, 10), F(9, 10)), (F(6, 5), F(13, 10), 1)], mem=3)
    data = plan_to_dict(baseline_plan("1f1b", problem))
    data["problem"] |= {"tf": 1, "tb": 1, "tw": 1}
    path = tmp_path / "old.json"
    path.write_text(json.dumps(data))
    assert load_plan(str(path)) == baseline_plan("1f1b", problem)
    code, out, _ = run(capsys, "validate", str(path))
    assert code == 0 and out.startswith("OK: ")
    toml = tmp_path / "old.toml"  # a problem file a user writes or edits: still refused, saying why
    toml.write_text('p = 2\nm = 4\ntf = 70\nstage_costs = [[60, 4, 105], [81, 211, 153]]\n')
    code, _, err = run(capsys, "solve", "--problem", str(toml), "--time-limit", "1")
    assert code == 1 and err.rstrip().endswith("(a file from `schedc profile` before 2026-11-30 has both: "
                                               "delete tf, tb and tw)")
