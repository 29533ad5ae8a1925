# sed -i '177s/if not is_flag(check_memory):/if not isinstance(check_memory, bool):/' schedc/validate.py
# sed -i '222s/ids=MappingProxyType(ids),/ids=ids,/' schedc/dag.py
# sed -i '180s/if not isinstance(problem, Problem):/if False:/' schedc/dag.py
# sed -i '188s/all(isinstance(i, Integral) and not isinstance(i, bool) for i in x)/True/' schedc/dag.py
# sed -i '136s/raise AttributeError(/return print(/' schedc/simulate.py
"""Library calls with arguments the CLI never passes (from a black-box audit of the Python API): each
is a one-line schedc error, never Python's own TypeError or AttributeError from deep inside, and
never a plan or file that says something false."""

from __future__ import annotations

import dataclasses
from fractions import Fraction as F

import pytest

from schedc import (
    Plan,
    Problem,
    load_csv_plan,
    load_plan,
    save_picture,
    save_plan,
    simulate,
    validate,
    write_csv,
)
from schedc.actions import Action
from schedc.baselines import applicable, baseline_plan
from schedc.dag import build_dag, task_index
from schedc.errors import ArgumentError, PlanFormatError, ProblemError, SchedcError, ScheduleError
from schedc.picture import figure
from schedc.plan_json import plan_text
from schedc.solvers import solve

ONE = Problem(p=1, m=1)
TIGHT = Problem(p=2, m=4, mem=1)
"""No textbook schedule fits its cap; the best plans within it take 20."""


@pytest.mark.parametrize("action", [
    Action("F", 0, 0.0), Action("F", "0", 0), Action("F", True, 0), Action(None, None, None),
    Action(["F"], 0, 0), Action("F", 0, 10**400), Action("F", -1, 0), ("X", 0, 0),
])
def test_an_action_with_fields_no_token_can_hold_is_refused(action):
    """``0F0.0`` or ``TrueF0`` would be written to a CSV that nothing reads back."""
    indices = "two integer indices from 0 to 999999999, got"
    with pytest.raises(PlanFormatError, match=rf"^an action must be .* {indices}"):
        Plan(problem=ONE, orders=[[action, "0I0", "0W0"]], source="x")
    with pytest.raises(PlanFormatError, match=r"^an action must be"):
        simulate(ONE, [[action]])


def test_an_action_of_numpy_ints_reads_as_ints():
    np = pytest.importorskip("numpy")
    plan = Plan(problem=ONE, orders=[[Action("F", np.int64(0), np.int32(0)), "0I0", "0W0"]], source="x")
    assert [type(a.stage) for a in plan.orders[0]] == [int, int, int]


def test_a_negative_lower_bound_is_refused():
    plan = baseline_plan("1f1b", Problem(p=2, m=2))
    with pytest.raises(PlanFormatError, match=r"^lower_bound must be >= 0, got -5$"):
        dataclasses.replace(plan, lower_bound=-5)


@pytest.mark.parametrize("bound", [21, 10**6])
def test_a_bound_above_a_list_plan_within_the_cap_is_refused_on_load(tmp_path, bound):
    """No textbook schedule fits TIGHT's cap, so the list scheduler's plan (20) is what disproves it."""
    over_cap = baseline_plan("gpipe", TIGHT)
    assert not applicable(TIGHT) or not any(baseline_plan(n, TIGHT).fits() for n in applicable(TIGHT))
    false = rf"lower_bound {bound} exceeds the list:\S+ schedule's 20 on the same problem: the bound is false"
    with pytest.raises(ScheduleError, match=false):  # save_plan refuses what load_plan would
        save_plan(dataclasses.replace(over_cap, lower_bound=bound), tmp_path / "plan.json")
    (tmp_path / "plan.json").write_text(plan_text(dataclasses.replace(over_cap, lower_bound=bound)))
    with pytest.raises(ScheduleError, match=false):
        load_plan(tmp_path / "plan.json")
    save_plan(dataclasses.replace(over_cap, lower_bound=20), tmp_path / "plan.json")
    assert load_plan(tmp_path / "plan.json").lower_bound == 20


@pytest.mark.parametrize(("call", "message"), [
    (lambda: baseline_plan("1f1b", None), "a baseline needs a Problem, got NoneType"),
    (lambda: baseline_plan("1f1b", {"p": 2}), "a baseline needs a Problem, got dict"),
    (lambda: applicable(None), "a baseline needs a Problem, got NoneType"),
])
def test_a_baseline_of_something_else_than_a_problem_is_an_argument_error(call, message):
    with pytest.raises(ArgumentError) as caught:
        call()
    assert str(caught.value) == message


@pytest.mark.parametrize(("call", "message"), [
    (lambda: build_dag(None), "build_dag needs a Problem, got NoneType"),
    (lambda: task_index("x"), "task_index needs a Problem, got str"),
    (lambda: build_dag(ONE, fused=3), "build_dag: fused must be a set of (stage, microbatch) pairs, got int"),
    (lambda: task_index(ONE, {(0, "a")}),
     "task_index: fused must be a set of (stage, microbatch) pairs, holding (0, 'a')"),
    (lambda: task_index(ONE, [[0, 1, 2]]),
     "task_index: fused must be a set of (stage, microbatch) pairs, holding [0, 1, 2]"),
])
def test_the_dag_of_something_else_than_a_problem_is_an_argument_error(call, message):
    """They were Python's AttributeError and TypeError (a reviewer's)."""
    with pytest.raises(ArgumentError) as caught:
        call()
    assert str(caught.value) == message


def test_fused_pairs_may_be_lists_or_numpy_integers_as_elsewhere_in_the_api():
    """The check first refused numpy's integers, which the index took before, and said "got list"
    of a list of pairs whose inner item was at fault (a reviewer's)."""
    np = pytest.importorskip("numpy")
    two = Problem(p=2, m=2)
    index = task_index(two, {(1, 0)})
    assert task_index(two, [[1, 0]]) is index and task_index(two, {(np.int64(1), np.int64(0))}) is index


def test_a_timeline_refuses_a_deleted_field_as_a_set_one():
    """``del timeline.scale`` passed (only setting was refused) and left it without its scale."""
    timeline = baseline_plan("1f1b", ONE).timeline
    with pytest.raises(AttributeError, match="Timeline is immutable"):
        del timeline.scale
    assert timeline.makespan == baseline_plan("1f1b", ONE).makespan


@pytest.mark.parametrize(("call", "message"), [
    (lambda: baseline_plan(["1f1b"], ONE), "unknown schedule ['1f1b']; choose from gpipe"),
    (lambda: solve(ONE, backend=["list"]), "unknown solver backend ['list']; choose from auto, list"),
    (lambda: solve(ONE, objective=["span"]), "objective must be one of makespan, span, got ['span']"),
])
def test_names_and_problems_of_the_wrong_type_are_problem_errors(call, message):
    with pytest.raises(ProblemError) as caught:
        call()
    assert str(caught.value).startswith(message)


@pytest.mark.parametrize("path", [None, 3, b"/tmp/x", "/tmp/a\x00b"])
def test_paths_that_are_not_text_or_hold_a_nul_are_one_line_errors(path):
    """A path of the wrong type is an ArgumentError (a TypeError, as the README says of every
    argument of the wrong type) for readers and writers alike; a NUL in a path is the writers'
    ArgumentError and the readers' own error type, as for a file they cannot read (readers raised
    their own type for a wrong type too, which ``except TypeError`` missed)."""
    plan = baseline_plan("1f1b", Problem(p=2, m=2))
    what = r"path (must be a str or os.PathLike, got|cannot hold a NUL character, got '/tmp/a\\x00b')"
    for write in (lambda: save_plan(plan, path), lambda: write_csv(plan, path), lambda: plan.save(path)):
        with pytest.raises(ArgumentError, match=rf"^an output {what}"):
            write()
    with pytest.raises(ArgumentError, match=rf"^a picture {what}"):
        save_picture(plan, path)
    for read in (lambda: load_plan(path), lambda: load_csv_plan(path, plan.problem)):
        error = PlanFormatError if isinstance(path, str) else ArgumentError
        with pytest.raises(error, match=rf"^a plan {what}"):
            read()


def test_a_bound_is_not_checked_against_plans_under_a_cap_no_schedule_meets(tmp_path):
    """Below the smallest feasible cap nothing fits, so a claimed bound disproves nothing: the file
    loads as before (the list scheduler, which refuses such a cap, is not asked)."""
    problem = Problem(p=4, m=8, mem=F(1, 4))
    plan = dataclasses.replace(baseline_plan("1f1b", dataclasses.replace(problem, mem=())), problem=problem,
                               lower_bound=300)
    save_plan(plan, tmp_path / "plan.json")
    assert load_plan(tmp_path / "plan.json").lower_bound == 300


def test_readers_and_checkers_name_what_they_need():
    """ArgumentErrors: one-line schedc errors, and TypeErrors as Python callers expect."""
    assert issubclass(ArgumentError, SchedcError) and issubclass(ArgumentError, TypeError)
    with pytest.raises(ArgumentError, match="load_csv_plan needs a Problem, got dict"):
        load_csv_plan("plan.csv", {"p": 2})

    class LooksLikeAPlan:
        orders = (("0F0",),)

    with pytest.raises(ArgumentError, match="validate needs a Problem and orders, or a Plan; got LooksLike"):
        validate(LooksLikeAPlan())
    with pytest.raises(ArgumentError, match="figure needs a Plan, got NoneType"):
        figure(None)


@pytest.mark.parametrize(("kind", "stage"), [("X", 0), ("F", -1), ("F", 2), (["F"], 0), ("F", "0")])
def test_a_duration_of_no_task_is_a_problem_error(kind, stage):
    kinds = r"this problem has stages 0\.\.1 and kinds F/I/W/B$"
    with pytest.raises(ProblemError, match=rf"^no .* task at stage .*: {kinds}"):
        Problem(p=2, m=2).duration(kind, stage)


def test_a_memory_curve_needs_its_own_problem_and_a_rank_of_it():
    problem = Problem(p=2, m=2)
    timeline = baseline_plan("1f1b", problem).timeline
    assert timeline.memory_curve(problem, 1)[:3] == [(0, 0), (1, 1), (3, F(1, 2))]
    for rank in (2, -1, True):
        with pytest.raises(ArgumentError, match=r"^rank must be 0\.\.1, got"):
            timeline.memory_curve(problem, rank)
    with pytest.raises(ArgumentError, match="needs the Problem of the timeline's 2 ranks"):
        timeline.memory_curve(Problem(p=3, m=2), 0)
    vshape = baseline_plan("zb-v", Problem(p=2, m=2, v=2, placement="vshape")).timeline
    looped = Problem(p=2, m=2, v=2)  # same p and v: the curve of other stages was drawn silently
    with pytest.raises(ArgumentError, match=r"^memory_curve needs the timeline's own placement: 3F0 on "
                                            r"rank 0 is not on that rank in p=2 m=2 v=2 looped"):
        vshape.memory_curve(looped, 0)
    what_if = timeline.memory_curve(Problem(p=2, m=2, w_mem=1), 1)  # another w_mem: a what-if
    assert what_if[:3] == [(0, 0), (1, 1), (3, 1)]
    import numpy as np

    assert timeline.memory_curve(problem, np.int64(1)) == timeline.memory_curve(problem, 1)  # was refused


def test_names_given_as_numpy_arrays_are_one_line_errors():
    """``x in tuple`` on an array is numpy's ambiguous-truth error, or for one element a pass that
    left an array in ``plan.status`` or wrote the compact CSV."""
    import numpy as np

    plan = baseline_plan("1f1b", Problem(p=2, m=2))
    for names in (np.array(["a", "b"]), np.array(["heuristic"]), np.array(["span"])):
        for field, error in (("status", PlanFormatError), ("objective", PlanFormatError)):
            with pytest.raises(error, match=f"^{field} must be one of"):
                dataclasses.replace(plan, **{field: names})
        with pytest.raises(ProblemError, match=r"^objective must be one of"):
            solve(plan.problem, time_limit=1, objective=names)
        with pytest.raises(ProblemError, match=r"^unknown solver backend"):
            solve(plan.problem, time_limit=1, backend=names)
        with pytest.raises(ProblemError, match=r"^the CSV layout is lockstep or compact, got array"):
            write_csv(plan, "/nonexistent/never.csv", layout=names)
    capped = Problem(p=2, m=2, mem=1)  # 1F1B holds two forwards on rank 0
    assert validate(capped, plan.orders, check_memory=np.True_) == validate(capped, plan.orders) != []
    assert validate(capped, plan.orders, check_memory=np.False_) == []  # as Problem's split takes them
    with pytest.raises(ArgumentError, match=r"^check_memory must be True or False, got np\.int64\(1\)$"):
        validate(plan.problem, plan.orders, check_memory=np.int64(1))


def test_seconds_may_be_a_decimal_as_every_other_number():
    from decimal import Decimal

    plan = baseline_plan("1f1b", Problem(p=2, m=2))
    assert dataclasses.replace(plan, solve_seconds=Decimal("1.5")).solve_seconds == 1.5
    for bad in (Decimal("NaN"), Decimal("sNaN"), Decimal("-1")):
        with pytest.raises(PlanFormatError, match=r"^solve_seconds must be a finite number >= 0"):
            dataclasses.replace(plan, solve_seconds=bad)


def test_a_plan_whose_times_json_cannot_hold_is_a_one_line_error(tmp_path):
    """Costs of 990-digit, unlike denominators: the plan's times need about 4,950 digits, past the
    4,300 that Python writes and reads (it was Python's ValueError from inside ``save_plan``)."""
    d = [10**990 + k for k in (1, 3, 7, 9, 13, 19)]
    costs = [(F(1, d[0]), F(1, d[1]), F(1, d[2])), (F(1, d[3]), F(1, d[4]), F(1, d[5]))]
    plan = baseline_plan("1f1b", Problem(p=2, m=1, stage_costs=costs))
    with pytest.raises(SchedcError, match=r"^a number of about 49\d\d digits cannot be written exactly"):
        save_plan(plan, tmp_path / "p.json")
    assert not (tmp_path / "p.json").exists()


def test_a_newline_in_a_path_stays_escaped_on_one_line(tmp_path):
    """Paths are quoted raw into messages: every SchedcError keeps its message on one line."""
    from schedc import load_plan, load_problem
    from schedc.baselines import baseline_plan
    from schedc.plan_json import save_plan
    from schedc.problem import Problem

    odd = f"{tmp_path}/no\nsuch"
    for call in (lambda: load_problem(odd + ".toml"), lambda: load_plan(odd + ".json"),
                 lambda: save_plan(baseline_plan("1f1b", Problem(p=2, m=2)), odd + "/p.json")):
        with pytest.raises(SchedcError) as err:
            call()
        assert "\n" not in str(err.value) and "no\\nsuch" in str(err.value)
    for odd in ("a\x0bb", "a\x1cb", "a\x85b", "a\u2028b", "a\x1b[31mb"):  # str.splitlines breaks at these
        with pytest.raises(SchedcError) as err:
            load_plan(f"{tmp_path}/{odd}.json")
        assert len(str(err.value).splitlines()) == 1 and "\x1b" not in str(err.value)


def test_a_dict_of_orders_takes_numpy_ranks_and_names_bad_keys():
    import numpy as np

    plan = baseline_plan("1f1b", Problem(p=2, m=2))
    orders = {np.int64(1): plan.orders[1], np.int64(0): plan.orders[0]}
    assert Plan(problem=plan.problem, orders=orders, source="x").makespan == plan.makespan
    with pytest.raises(PlanFormatError, match=r"needs the ranks 0\.\.1 as keys, got \[True, 0\]"):
        Plan(problem=plan.problem, orders={True: plan.orders[1], 0: plan.orders[0]}, source="x")


def test_the_shared_task_index_cannot_be_changed_by_a_caller():
    """It is cached per problem: swapping two of its ids made every later replay of that problem
    wrong (a reviewer's 1F1B ended at 9 where it ends at 8)."""
    index = task_index(Problem(p=2, m=2))
    first, second = list(index.ids)[:2]
    with pytest.raises(TypeError):
        index.ids[first] = index.ids[second]
    assert baseline_plan("1f1b", Problem(p=2, m=2)).makespan == 8
