# sed -i '206s/shared_neighbours(plan.problem) else/False else/' schedc/cli_outputs.py
"""The note ``validate`` gives a CSV that torch's ``PipelineScheduleMulti`` would misread: a cross-rank
input in the same or a later column, which its lockstep columns pair with another action's tensor
(every CSV schedc wrote before its exports kept the idle cells, and the compact layout, trained
wrong gradients there after an "OK")."""

from __future__ import annotations

from importlib import import_module

import pytest
from hypothesis import given, settings

from schedc.baselines import baseline_plan
from schedc.problem import Problem
from schedc.solvers.incumbent import list_plan
from schedc.torch_csv import lockstep_rows, orders_to_rows
from schedc.torch_lockstep import lockstep_conflict
from tests.cli_helpers import run
from tests.strategies import problems


@settings(max_examples=40, deadline=None)
@given(problems(max_p=5, max_m=8))
def test_the_lockstep_export_never_has_a_conflict(problem):
    assert lockstep_conflict(problem, lockstep_rows(list_plan(problem, "makespan"))) is None


def test_torchs_own_lockstep_orders_have_none() -> None:
    schedules = import_module("torch.distributed.pipelining.schedules")
    for schedule, kw in [(schedules.ScheduleInterleaved1F1B, dict(v=2, split=False)),
                         (schedules.ScheduleInterleavedZeroBubble, dict(v=2)),
                         (schedules.ScheduleLoopedBFS, dict(v=2, split=False))]:
        for p, m in [(2, 4), (3, 6), (4, 8)]:
            problem = Problem(p=p, m=m, **kw)
            state = type("State", (), {})()
            state.pp_group_size, state._n_microbatches, state.n_local_stages = p, m, problem.v
            state._stages, state.num_stages = [None] * problem.v, problem.num_stages
            state.number_of_rounds = max(1, m // p)
            state.microbatches_per_round = m // state.number_of_rounds
            steps = [schedule._calculate_single_rank_operations(state, r) for r in range(p)]
            rows = [["" if a is None else str(a) for a in row] for row in steps]
            assert lockstep_conflict(problem, rows) is None, (schedule.__name__, p, m)


def test_the_compact_layout_names_the_first_conflict() -> None:
    problem = Problem(p=2, m=4)
    (r, c, action), (pr, pc, producer) = lockstep_conflict(problem, orders_to_rows(
        baseline_plan("zb-h1", problem).orders))
    assert (r, c, str(action), pr, pc, str(producer)) == (1, 0, "1F0", 0, 0, "0F0")


@pytest.mark.parametrize("layout, noted", [("compact", True), ("lockstep", False)])
def test_validate_notes_it(capsys, tmp_path, layout, noted) -> None:
    path = str(tmp_path / "plan.csv")
    flags = ["--csv", path, "--csv-layout", layout]
    assert run(capsys, "baseline", "zb-h1", "--p", "2", "--m", "4", *flags)[0] == 0
    code, out, _ = run(capsys, "validate", path)
    assert code == 0 and out.startswith("OK: ")
    assert ("note: torch's PipelineScheduleMulti runs the columns in lockstep" in out) == noted
    assert ("here 1F0 (rank 1, column 1) takes its input from 0F0 (rank 0, column 1)" in out) == noted


def test_torchs_compute_comms_dumps_get_no_such_note() -> None:
    """Only _PipelineScheduleRuntime reads those, one rank's row as its own sequence."""
    rows = [["0F0", "0SEND_F0", "", "0RECV_B0", "0B0"], ["1RECV_F0", "1F0", "1B0", "1SEND_B0"]]
    assert lockstep_conflict(Problem(p=2, m=1, split=False), rows) is None


def test_overlapped_cells_get_no_such_note() -> None:
    """PipelineScheduleMulti cannot run an OVERLAP_F_B cell at all (torch's DualPipeV CSV): it raises,
    so "trains wrong gradients, silently" would be wrong there."""
    rows = [["0F0", "(0F1;3B0)OVERLAP_F_B", "3B1"], ["1F0", "2F0", "1F1", "2F1", "2B0", "1B0", "2B1", "1B1"]]
    assert lockstep_conflict(Problem(p=2, m=2, v=2, placement="vshape", split=False), rows) is None


SHARED = [(["--p", "2", "--v", "2", "--placement", "vshape"], "1 and 2, which share rank 1"),
          (["--p", "1", "--v", "2"], "0 and 1, which share rank 0")]


@pytest.mark.parametrize("flags, stages", SHARED)
def test_validate_says_the_lockstep_class_fails_where_neighbours_share_rank(capsys, tmp_path, flags, stages):
    """torch's lockstep class sends between stages on one rank over the process group: gloo's "Pair is
    not connected" (a V shape, or p = 1), whatever the layout; the runtime class runs the file."""
    path = str(tmp_path / "plan.csv")
    assert run(capsys, "solve", *flags, "--m", "4", "--quiet", "--time-limit", "5", "--csv", path)[0] == 0
    code, out, _ = run(capsys, "validate", path)
    assert code == 0 and f"note: torch's PipelineScheduleMulti sends between stages {stages}" in out
    assert "which gloo refuses" in out and "runs the columns in lockstep" not in out


def test_a_compact_v_shape_gets_both_notes(capsys, tmp_path) -> None:
    """Where a backend sends between stages of one rank (NCCL was not tried), the lockstep runner
    would still misread the compact layout: both are said."""
    path = str(tmp_path / "plan.csv")
    flags = ["--p", "2", "--m", "4", "--v", "2", "--placement", "vshape", "--csv-layout", "compact"]
    assert run(capsys, "baseline", "zb-v", *flags, "--csv", path)[0] == 0
    out = run(capsys, "validate", path)[1]
    assert "which gloo refuses" in out and "note: where a backend runs it (not gloo), torch's" in out
    assert "writes it with the idle cells it reads right was not tried" in out  # gloo fails on those too


def test_a_one_part_overlap_cell_is_the_runtime_class_alone_too() -> None:
    """``(0F0)OVERLAP_F_B`` holds one action: PipelineScheduleMulti still cannot run the cell, so no
    "trains wrong gradients" note (it counted cells of two parts or more)."""
    rows = [["(0F0)OVERLAP_F_B", "0F1", "0B0", "0B1"], ["1F0", "1B0", "1F1", "1B1"]]
    assert lockstep_conflict(Problem(p=2, m=2, split=False), rows) is None


@pytest.mark.parametrize("p, noted", [(2, True), (1, False)])
def test_writing_a_compact_csv_the_lockstep_class_misreads_says_so(capsys, tmp_path, p, noted) -> None:
    """solve and baseline wrote one without a word; at p = 1 the layouts are the same file."""
    path = str(tmp_path / "plan.csv")
    flags = ["--p", str(p), "--m", "4", "--csv", path]
    code, out, err = run(capsys, "baseline", "1f1b", *flags, "--csv-layout", "compact")
    assert code == 0 and out.endswith(f"wrote {path}\n")
    assert ("note: " + path + ": the compact layout is for torch's _PipelineScheduleRuntime" in err) == noted
    assert "compact layout" not in run(capsys, "baseline", "1f1b", *flags)[2]


@pytest.mark.parametrize("flags, fix", [
    (["interleaved-1f1b", "--v", "2"], "(the default layout, lockstep, keeps them apart)"),
    (["zb-v", "--v", "2", "--placement", "vshape"], "(neither layout runs there on gloo: two neighbouring "
                                                    "stages share a rank)"),
])
def test_the_compact_note_offers_lockstep_only_where_it_runs(capsys, tmp_path, flags, fix) -> None:
    """A V shape's note pointed to the lockstep layout, which PipelineScheduleMulti fails on as well."""
    path = str(tmp_path / "plan.csv")
    code, _, err = run(capsys, "baseline", *flags, "--p", "2", "--m", "4", "--csv", path,
                       "--csv-layout", "compact")
    assert code == 0 and err.rstrip("\n").endswith(fix) and len(err.splitlines()) == 1
