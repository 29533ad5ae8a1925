"""torch compute-only CSV: round trip, one-line errors, and torch's own parser, checks and runtime.

torch is imported only inside the tests that check against it (schedc itself never imports it).
"""

from __future__ import annotations

import csv
import tempfile
from dataclasses import replace
from fractions import Fraction
from importlib import import_module
from pathlib import Path
from types import SimpleNamespace

import pytest
from hypothesis import given, settings

from schedc.actions import Action
from schedc.baselines import applicable, baseline_plan
from schedc.dag import dependencies, fused_backwards
from schedc.errors import PlanFormatError, ProblemError, ScheduleError
from schedc.plan import Plan
from schedc.problem import Problem
from schedc.torch_csv import (
    LAYOUTS,
    csv_structure,
    csv_text,
    load_csv_plan,
    lockstep_rows,
    orders_to_rows,
    read_csv_orders,
    rows_to_orders,
    write_csv,
)
from tests.strategies import problems
from tests.test_show import layerwise_orders

# Fixed problems covering split/unsplit, v > 1 looped, vshape, a single rank and fractional costs.
PROBLEMS = [
    Problem(p=1, m=1),
    Problem(p=2, m=4, split=False, tb=1, tw=0),
    Problem(p=4, m=8),
    Problem(p=3, m=5, tf="1/2", tb="1/3", tw="1/4", comm="1/6"),
    Problem(p=3, m=4, v=2),
    Problem(p=2, m=3, v=2, placement="vshape"),
    Problem(p=4, m=6, v=2, placement="vshape", split=False),
]


def plans_of(problem: Problem) -> list[Plan]:
    """Every applicable baseline (new ones are covered automatically) plus a layer-wise order that
    exists for every placement."""
    plans = [baseline_plan(name, problem) for name in applicable(problem)]
    return [*plans, Plan(problem=problem, orders=layerwise_orders(problem), source="layerwise")]


def all_plans() -> list[Plan]:
    return [plan for problem in PROBLEMS for plan in plans_of(problem)]


@pytest.fixture(scope="module")
def schedules():
    return import_module("torch.distributed.pipelining.schedules")  # a test requirement: no skip


# ---- round trip and format -------------------------------------------------------------------


def test_rows_are_torch_tokens_one_row_per_rank(tmp_path):
    plan = baseline_plan("1f1b", Problem(p=2, m=2, split=False))
    write_csv(plan, str(tmp_path / "p.csv"))
    assert (tmp_path / "p.csv").read_text().splitlines() == ["0F0,0F1,,0B0,,0B1", ",1F0,1B0,1F1,1B1"]


@settings(max_examples=30, deadline=None)
@given(problems(max_p=4, max_m=5))
def test_lockstep_columns_put_every_input_in_an_earlier_column(problem):
    """torch's PipelineScheduleMulti runs a column at a time and pairs each send with the receive in
    that column: the compute-only rows without idle cells made it train wrong gradients silently."""
    for plan in plans_of(problem):
        column = {Action.parse(cell): t for row in lockstep_rows(plan) for t, cell in enumerate(row) if cell}
        fused = fused_backwards(problem, plan.orders)
        for a, t in column.items():
            assert all(column[d] < t for d in dependencies(problem, a, fused)), (plan.source, a)
        assert [[a for a in row if a] for row in lockstep_rows(plan)] == orders_to_rows(plan.orders)


@settings(max_examples=30, deadline=None)
@given(problems(max_p=5, max_m=6))
def test_read_of_write_gives_the_same_orders(problem):
    with tempfile.TemporaryDirectory() as tmp:
        for plan in plans_of(problem):
            path = str(Path(tmp) / "plan.csv")
            for layout in LAYOUTS:
                write_csv(plan, path, layout)
                assert read_csv_orders(path, problem) == plan.orders
                assert load_csv_plan(path, problem).makespan == plan.makespan


def test_the_compact_layout_has_no_empty_cells_and_is_smaller():
    plan = baseline_plan("gpipe", Problem(p=4, m=8))
    compact, lockstep = csv_text(plan, "compact"), csv_text(plan)
    assert ",," not in compact
    assert compact.splitlines() == [",".join(row) for row in orders_to_rows(plan.orders)]
    assert len(compact) < len(lockstep)
    with pytest.raises(ProblemError, match="the CSV layout is lockstep or compact, got 'dense'"):
        csv_text(plan, "dense")


def test_empty_cells_are_idle_steps_as_in_torch(tmp_path):
    path = tmp_path / "p.csv"
    path.write_text("0F0,,0F1,0B0,0B1\n,1F0,1B0,1F1,1B1,\n")
    problem = Problem(p=2, m=2, split=False)
    assert read_csv_orders(str(path), problem) == baseline_plan("1f1b", problem).orders


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("0F0,0X1\n1F0\n", "rank 0 position 1 (row 1, column 2): unknown action token '0X1'"),
        ("0F0\n,,1F0,1B\n", "rank 1 position 1 (row 2, column 4): unknown action token '1B'"),
        ("0F0,0B0\n", "1 row, but the problem has p = 2 ranks"),
        ("0F0\n1F0\n2F0\n", "3 rows, but the problem has p = 2 ranks"),
        ("0F0,0B0\n1F0,1B0\n\n", "3 rows, but the problem has p = 2 ranks (row 3 is blank)"),  # count first
        ("0F0,0B0\n , \n", "row 2 (rank 1) is blank: each row lists one rank's actions"),
        ("0F0,0B0\n,1SEND_F0,\n", "row 2 (rank 1) has no compute actions"),
        ("0F0,0SEND_F,0B0\n1F0,1B0\n", "rank 0 position 1 (row 1, column 2): transfer token '0SEND_F' "
                                      "names no microbatch (torch writes 0SEND_F0 for microbatch 0)"),
        # transfers torch's runtime would fail on (they were skipped unchecked)
        ("0F0,7SEND_F0,0B0\n1F0,1B0\n", "row 1 (rank 0), column 2: transfer token '7SEND_F0' names stage 7, "
                                       "but the problem has 2 stages"),
        ("0F0,1RECV_F0,0B0\n1F0,1B0\n", "transfer token '1RECV_F0' names stage 1, which is on rank 1: a "
                                       "row's transfers name its own stages"),
        ("0F0,0SEND_F9,0B0\n1F0,1B0\n", "transfer token '0SEND_F9' names microbatch 9, but the problem has "
                                       "m = 1"),
        ("0F0,0SEND_F1,0B0\n1F0,1B0\n", "transfer token '0SEND_F1' names microbatch 1, but the problem has "
                                       "m = 1"),  # indices run to m - 1
    ],
)
def test_defects_are_one_line_errors_naming_row_and_column(tmp_path, text, message):
    path = tmp_path / "bad.csv"
    path.write_text(text)
    with pytest.raises(PlanFormatError) as err:
        read_csv_orders(str(path), Problem(p=2, m=1, split=False))
    assert message in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize(("text", "says"), [
    ("0F0,0B0\n1F0,1B0\n\n", "row 3 is blank: each row lists one rank's actions (remove it)"),
    ("0F0,0B0\n\n1F0,1B0\n\n", "rows 2, 4 are blank: each row lists one rank's actions (remove them)"),
    ("0F0,0B0\n,,\n", "row 2 is blank"),
])
def test_blank_rows_are_named_where_the_rows_give_the_rank_count(tmp_path, text, says):
    """Without a problem the rows give p, so a stray blank line was a rank "with no compute actions",
    which did not say that the row was empty (a row of transfers only says that, still)."""
    path = tmp_path / "blank.csv"
    path.write_text(text)
    with pytest.raises(PlanFormatError) as err:
        read_csv_orders(str(path))
    assert str(err.value).startswith(f"{path}: {says}") and "\n" not in str(err.value)


def test_missing_file_and_missing_task(tmp_path):
    problem = Problem(p=2, m=1, split=False)
    with pytest.raises(PlanFormatError, match="cannot read plan"):
        read_csv_orders(str(tmp_path / "nope.csv"), problem)
    (tmp_path / "short.csv").write_text("0F0,0B0\n1F0\n")
    with pytest.raises(ScheduleError, match="1B0: missing"):
        load_csv_plan(str(tmp_path / "short.csv"), problem)


def test_rows_to_orders_inverts_orders_to_rows():
    for plan in all_plans():
        assert rows_to_orders(orders_to_rows(plan.orders), plan.problem) == plan.orders


# ---- against torch.distributed.pipelining ------------------------------------------------------


def torch_actions(schedules, path: str) -> dict[int, list]:
    with open(path, newline="") as f:
        return {r: [schedules._Action.from_str(s) for s in row if s] for r, row in enumerate(csv.reader(f))}


def test_torch_parses_our_tokens_back_to_the_same_actions(schedules, tmp_path):
    for plan in all_plans():
        write_csv(plan, str(tmp_path / "p.csv"))
        actions = torch_actions(schedules, str(tmp_path / "p.csv"))
        for r, order in enumerate(plan.orders):
            assert [(a.stage_index, a.computation_type.value, a.microbatch_index) for a in actions[r]] == [
                (a.stage, a.kind, a.mb) for a in order
            ]


def test_torch_validates_lowers_and_simulates_our_plans(schedules, tmp_path):
    """_validate_schedule infers the placement we used; the send/recv lowering and torch's dry-run
    simulator finish every plan (a wrong order would hang them: 'Schedule is not progressing')."""
    for plan in all_plans():
        problem = plan.problem
        write_csv(plan, str(tmp_path / "p.csv"))
        actions = torch_actions(schedules, str(tmp_path / "p.csv"))
        mapping = schedules._validate_schedule(actions, problem.p, problem.num_stages, problem.m)
        assert mapping == dict(enumerate(problem.stage_rank)), plan.source
        stage_to_rank = mapping.__getitem__
        lowered = schedules._add_send_recv(
            {r: list(a) for r, a in actions.items()}, stage_to_rank, problem.num_stages
        )
        simulated = schedules._simulate_comms_compute(lowered, stage_to_rank, problem.num_stages)
        for r, order in enumerate(plan.orders):
            compute = [a for a in simulated[r] if a is not None and a.is_compute_op]
            assert [str(a) for a in compute] == [str(a) for a in order], (plan.source, r)


def test_torch_runtime_loads_our_csv(schedules, tmp_path):
    """_PipelineScheduleRuntime._load_csv with lightweight fake stages (it reads only num_stages,
    group_size and group_rank at construction): it keeps our orders and our placement."""
    for plan in all_plans():
        problem = plan.problem
        write_csv(plan, str(tmp_path / "p.csv"))
        stages = [SimpleNamespace(num_stages=problem.num_stages, group_size=problem.p, group_rank=0)]
        runtime = schedules._PipelineScheduleRuntime(stages, problem.m)
        runtime._load_csv(str(tmp_path / "p.csv"))
        assert {r: [str(a) for a in o if a is not None] for r, o in runtime.pipeline_order.items()} == {
            r: [str(a) for a in o] for r, o in enumerate(plan.orders)
        }
        assert runtime.stage_index_to_group_rank == dict(enumerate(problem.stage_rank))
        assert set(runtime.pipeline_order_with_comms) == set(range(problem.p))


def test_a_deadlock_fails_both_torch_and_schedc(schedules, tmp_path):
    """The torch checks above can fail: a cross-rank wait cycle stops torch's lowering, and schedc."""
    problem = Problem(p=2, m=2, split=False)
    path = tmp_path / "deadlock.csv"
    path.write_text("0F0,0B0,0F1,0B1\n1F1,1B1,1F0,1B0\n")
    with pytest.raises(ScheduleError, match="deadlock"):
        load_csv_plan(str(path), problem)
    actions = torch_actions(schedules, str(path))
    with pytest.raises(AssertionError, match="can't schedule sends/recvs"):
        schedules._add_send_recv(actions, lambda s: s, problem.num_stages)


def test_torch_actions_and_pipeline_order_shape_make_a_plan(schedules, tmp_path):
    """torch's own ``_Action`` objects in its ``pipeline_order`` shape (rank -> list, None idle)."""
    for plan in all_plans():
        write_csv(plan, str(tmp_path / "p.csv"))
        order = {r: [None, *row] for r, row in torch_actions(schedules, str(tmp_path / "p.csv")).items()}
        assert Plan(problem=plan.problem, orders=order, source="torch").orders == plan.orders


def _torch_stages(p: int) -> list[SimpleNamespace]:
    """What torch's schedule constructors read from rank 0's two stages (no model, no process group)."""
    return [SimpleNamespace(num_stages=2 * p, group_size=p, group_rank=0, submod=None, stage_index=i)
            for i in range(2)]


@pytest.mark.parametrize(("schedule", "fmt", "baseline", "placement", "split"), [
    ("ScheduleInterleaved1F1B", "compute_comms", "interleaved-1f1b", "looped", False),
    ("ScheduleInterleavedZeroBubble", "compute_only", "interleaved-zb", "looped", True),
    ("ScheduleZBVZeroBubble", "compute_only", "zb-v", "vshape", True),
])
def test_csvs_torch_writes_read_with_the_problem_their_rows_give(schedules, tmp_path, schedule, fmt, baseline,
                                                                  placement, split):
    """torch's own dumps, its communication and FSDP actions included, need no problem options."""
    path = str(tmp_path / "torch.csv")
    getattr(schedules, schedule)(_torch_stages(2), 4)._dump_csv(path, format=fmt)
    structure = csv_structure(read_csv_orders(path))
    assert structure == {"p": 2, "m": 4, "v": 2, "placement": placement, "split": split}
    problem = Problem(**structure)
    assert load_csv_plan(path, problem).makespan == baseline_plan(baseline, problem).makespan


def test_an_overlap_cell_gives_its_parts(tmp_path):
    path = tmp_path / "overlap.csv"
    path.write_text("0F0,0F1,(0B0;0F2)OVERLAP_F_B,0B1,0B2\n1F0,1B0,1F1,1B1,1F2,1B2\n")
    problem = Problem(p=2, m=3, v=1, split=False)
    plan = load_csv_plan(str(path), problem)
    assert [str(a) for a in plan.orders[0]] == ["0F0", "0F1", "0B0", "0F2", "0B1", "0B2"]


@pytest.mark.parametrize(("p", "m"), [(2, 4), (4, 8), (4, 11)])
def test_torch_dualpipev_reads_as_a_split_plan_whose_bs_run_whole(schedules, tmp_path, p, m):
    """torch's DualPipeV mixes B with I/W. schedc's dualpipev baseline runs each such B as I then W:
    the same orders otherwise (``test_baselines``), and never slower."""
    path = str(tmp_path / "dpv.csv")
    schedules.ScheduleDualPipeV(_torch_stages(p), m)._dump_csv(path, format="compute_comms")
    structure = csv_structure(read_csv_orders(path))
    assert structure == {"p": p, "m": m, "v": 2, "placement": "vshape", "split": True}
    problem = Problem(**structure, tb=2, comm=Fraction(1, 2))  # with comm 0 its B's cost nothing here
    theirs, ours = load_csv_plan(path, problem), baseline_plan("dualpipev", problem)
    assert theirs.violations() == [] and any(a.kind == "B" for order in theirs.orders for a in order)
    as_split = [[a._replace(kind="I") if a.kind == "B" else a for a in order if a.kind != "W"]
                for order in theirs.orders]
    assert [[a for a in order if a.kind != "W"] for order in ours.orders] == as_split
    assert theirs.makespan > ours.makespan
    assert load_csv_plan(path, replace(problem, tw=0)).makespan == baseline_plan(
        "dualpipev", replace(problem, tw=0)).makespan


def test_a_nested_overlap_is_one_line_not_a_recursion(tmp_path):
    path = tmp_path / "nested.csv"
    path.write_text("(" * 500 + "0F0" + ")OVERLAP_F_B" * 500 + "\n")
    with pytest.raises(PlanFormatError, match="an OVERLAP_F_B inside an OVERLAP_F_B"):
        read_csv_orders(str(path), Problem(p=1, m=1))


def test_what_the_rows_give_is_named_when_it_is_the_suspect(tmp_path, capsys):
    """torch's Schedule1F1B writes F1..F5 on its last rank for m = 5: the m read from the rows is 6,
    and the correct ranks then miss microbatch 5. Stages that do not divide among the rows are one
    line, not a stage the file never had reported missing; p = 1 rows are looped. show says where m
    came from too."""
    from tests.cli_helpers import run

    (tmp_path / "1f1b.csv").write_text("0F0,0F1,0F2,0F3,0F4,0B0,0B1,0B2,0B3,0B4\n"
                                       "1F0,1F1,1F2,1F3,1F4,1B0,1B1,1B2,1B3,1B4\n"
                                       "2F1,2F2,2F3,2F4,2F5,2B1,2B2,2B3,2B4,2B5\n")
    code, out, _ = run(capsys, "validate", str(tmp_path / "1f1b.csv"))
    assert code == 1 and "0F5: missing" in out
    assert "m = 6 was taken from its largest microbatch index, in 2F5 on rank 2; give --m" in out
    code, out, _ = run(capsys, "validate", str(tmp_path / "1f1b.csv"), "--m", "5")
    assert code == 1 and "2F5: not a task of 3 stages x 5 microbatches" in out and "taken from" not in out
    code, _, err = run(capsys, "show", str(tmp_path / "1f1b.csv"))  # show named only the missing 0F5
    assert code == 1 and err.count("\n") == 1 and "0F5: missing (+" in err
    assert err.rstrip().endswith("m = 6 was taken from its largest microbatch index, in 2F5 on rank 2; give "
                                 "--m to check it against another")
    code, _, err = run(capsys, "show", str(tmp_path / "1f1b.csv"), "--m", "5")
    assert code == 1 and "taken from" not in err
    (tmp_path / "three.csv").write_text("0F0,2F0,2B0,0B0\n1F0,1B0\n")
    code, _, err = run(capsys, "validate", str(tmp_path / "three.csv"))
    assert code == 1 and err.count("\n") == 1
    assert "its rows name 3 stages (0 to 2), which do not divide evenly among its 2 rows" in err
    code, out, _ = run(capsys, "validate", str(tmp_path / "three.csv"), "--v", "2")
    assert code == 1 and "3F0: missing" in out and "taken from" not in out  # as the user asked
    assert csv_structure(((Action.parse("0F0"), Action.parse("1F0")),))["placement"] == "looped"
    five = (tuple(map(Action.parse, ("0F0", "2F0", "4F0"))), tuple(map(Action.parse, ("1F0", "3F0"))))
    assert csv_structure(five)["v"] == 3  # 5 stages on 2 rows: 3 a rank, rounded up


def test_a_v_given_against_v_shaped_rows_names_the_rows(tmp_path, capsys):
    from tests.cli_helpers import run

    (tmp_path / "v.csv").write_text("0F0,3F0,3B0,0B0\n1F0,2F0,2B0,1B0\n")
    code, _, err = run(capsys, "validate", str(tmp_path / "v.csv"), "--v", "1")
    assert code == 1 and "v.csv's rows place its stages in a V; add --placement looped" in err
    code, _, err = run(capsys, "validate", str(tmp_path / "v.csv"), "--tf", "x")
    assert code == 1 and "in a V" not in err


def test_a_typo_that_makes_the_rows_too_large_names_the_file_and_the_token(tmp_path, capsys):
    """0F3000000 for 0F3 gave a problem of 18 million tasks: the one line said "problem too large"
    without the file or the action the count came from."""
    from tests.cli_helpers import run

    path = tmp_path / "typo.csv"
    path.write_text("0F0,0F3000000,,0I0,0W0,,0I1,0W1\n,1F0,1I0,1W0,1F1,1I1,1W1\n")
    code, out, err = run(capsys, "validate", str(path))
    assert code == 1 and out == "" and err.count("\n") == 1
    assert err.startswith(f"schedc: error: {path}: problem too large: 18000006 tasks")
    assert err.endswith("(its rows give m = 3000001 from 0F3000000 on rank 0 and 2 stages from 1F0)\n")
    code, out, _ = run(capsys, "validate", str(path), "--m", "4")
    assert code == 1 and "0F3000000: not a task of 2 stages x 4 microbatches" in out  # the flag's m


def test_a_problem_file_decides_the_structure_its_rows_then_miss(tmp_path, capsys):
    """With --problem the structure is the file's: rows naming 3 stages against its v = 2 list the
    missing actions (no hint to give --v, which the file already gives), and for p = 1 the V shape
    and looped placements are one, so rows cannot disagree with the file's placement."""
    from tests.cli_helpers import run

    (tmp_path / "short.csv").write_text("0F0,2F0,2B0,0B0\n,1F0,1B0\n")
    (tmp_path / "two.toml").write_text("p = 2\nm = 1\nv = 2\nsplit = false\n")
    code, out, err = run(capsys, "validate", str(tmp_path / "short.csv"), "--problem",
                         str(tmp_path / "two.toml"))
    assert code == 1 and "3F0: missing" in out and "3B0: missing" in out and "divide evenly" not in out + err
    (tmp_path / "one.csv").write_text("0F0,1F0,1B0,0B0\n")
    (tmp_path / "vs.toml").write_text('p = 1\nm = 2\nv = 2\nplacement = "vshape"\nsplit = false\n')
    code, out, err = run(capsys, "validate", str(tmp_path / "one.csv"), "--problem",
                         str(tmp_path / "vs.toml"))
    assert code == 1 and "0F1: missing" in out and "placement" not in out + err
