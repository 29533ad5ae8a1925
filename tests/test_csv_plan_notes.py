# sed -i '164s/if note is not None:/if False:/' schedc/cli_validate.py
"""What ``validate`` says about where a torch CSV's counts came from (schedc/cli_plan_input.py):
a CSV named in capitals is still a CSV, a flag's m is never said to come from the rows, a problem
file's m is not "taken from its largest microbatch index", and only what the rows decide (a larger
m or v in the problem only makes tasks missing; a placement needs every stage; any I or W, not just
a B, shows a split) is named as overridden."""

from __future__ import annotations

import os
import threading
from pathlib import Path

from tests.cli_helpers import run

TORCH_1F1B = ("0F0,0F1,0F2,0F3,0F4,0B0,0B1,0B2,0B3,0B4\n1F0,1F1,1F2,1F3,1F4,1B0,1B1,1B2,1B3,1B4\n"
              "2F1,2F2,2F3,2F4,2F5,2B1,2B2,2B3,2B4,2B5\n")
"""torch's Schedule1F1B for m = 5 writes 2F1..2F5 on its last rank: the rows read as m = 6."""


def test_a_csv_named_in_capitals_is_read_as_a_csv(capsys, tmp_path):
    path = str(tmp_path / "PLAN.CSV")
    assert run(capsys, "baseline", "1f1b", "--p", "4", "--m", "8", "--csv", path)[0] == 0
    code, out, err = run(capsys, "validate", path)
    assert code == 0 and out.startswith("OK: p=4 m=8") and err == ""


def test_a_too_large_m_from_a_flag_is_not_said_to_come_from_the_rows(capsys, tmp_path):
    path = tmp_path / "small.csv"
    path.write_text("0F0,0B0\n1F0,1B0\n")
    code, out, err = run(capsys, "validate", str(path), "--m", "10000000")
    assert code == 1 and out == "" and "problem too large" in err
    assert err.endswith("(its rows give 2 stages from 1F0)\n")


def test_a_too_large_m_from_a_problem_file_is_not_said_to_come_from_the_rows(capsys, tmp_path):
    (tmp_path / "small.csv").write_text("0F0,0B0\n1F0,1B0\n")
    (tmp_path / "big.toml").write_text("p = 2\nm = 10000000\nsplit = false\n")
    problem = str(tmp_path / "big.toml")
    code, out, err = run(capsys, "validate", str(tmp_path / "small.csv"), "--problem", problem)
    assert code == 1 and out == "" and "problem too large" in err
    assert f"(with problem file {tmp_path / 'big.toml'})" in err and "rows give" not in err


def test_an_m_from_a_problem_file_is_not_said_to_be_taken_from_the_rows(capsys, tmp_path):
    (tmp_path / "1f1b.csv").write_text(TORCH_1F1B)
    (tmp_path / "m6.toml").write_text("p = 3\nm = 6\nsplit = false\n")
    code, out, _ = run(capsys, "validate", str(tmp_path / "1f1b.csv"), "--problem", str(tmp_path / "m6.toml"))
    assert code == 1 and "0F5: missing" in out
    assert "taken from" not in out


def test_a_larger_v_or_a_v_cut_short_is_missing_tasks_not_an_override(capsys, tmp_path):
    """Rows of stages 0 and 1 only (a file cut short) against v = 2: the missing tasks are listed,
    and neither v nor the placement (which needs every stage) is named as the rows' own."""
    small, fwd = tmp_path / "small.csv", tmp_path / "fwd.csv"
    small.write_text("0F0,0B0\n1F0,1B0\n")
    code, out, _ = run(capsys, "validate", str(small), "--v", "2", "--m", "1")
    assert code == 1 and "2F0: missing" in out and "rows give" not in out
    fwd.write_text("0F0\n1F0\n")
    code, out, _ = run(capsys, "validate", str(fwd), "--v", "2", "--placement", "vshape", "--m", "1")
    assert code == 1 and "3F0: missing" in out and "rows give" not in out


def test_rows_of_i_and_w_decide_the_split(capsys, tmp_path):
    path = tmp_path / "iw.csv"
    path.write_text("0F0,0I0,0W0\n1F0,1I0,1W0\n")
    code, out, _ = run(capsys, "validate", str(path), "--no-split", "--m", "1")
    assert code == 1 and f"{path}: its rows give split = true, where the problem has split = false from a " \
        "flag; the errors below follow the problem" in out


def test_only_an_error_about_the_v_shape_gets_the_placement_hint(capsys, tmp_path):
    """Rows placed in a V with --v given: the hint to add --placement looped belongs to an error
    that names vshape, not to any error whose text holds a "v" (here the bad value itself)."""
    path = tmp_path / "v.csv"
    path.write_text("0F0,3F0,3B0,0B0\n1F0,2F0,2B0,1B0\n")
    code, _, err = run(capsys, "validate", str(path), "--v", "2", "--tf", "v")
    assert code == 1 and err == "schedc: error: --tf must be a number, got 'v'\n"


def test_a_count_of_one_reads_as_a_number_not_true(capsys, tmp_path):
    """The bools' names were looked up by value, and 1 == True: --m 1 and --v 1 read "m = true"."""
    il = str(tmp_path / "il.csv")
    made = run(capsys, "baseline", "interleaved-1f1b", "--p", "4", "--m", "8", "--v", "2", "--csv", il)
    assert made[0] == 0
    code, out, _ = run(capsys, "validate", il, "--m", "1", "--v", "1")
    assert code == 1 and f"{il}: its rows give m = 8 (from 0F7 on rank 0), v = 2, where the problem has " \
        "m = 1 from a flag, v = 1 from a flag;" in out


def test_rows_in_a_placement_schedc_does_not_model_say_so(capsys, tmp_path):
    """Contiguous stages (0, 1 on rank 0; 2, 3 on rank 1), which torch accepts: validate listed an
    error per action without the cause (found by the interop hunt). A note names it, and show's
    one-line error carries it; with --placement given, or a stage on two ranks, no note."""
    path = tmp_path / "contiguous.csv"
    path.write_text("0F0,1F0,1B0,0B0\n2F0,3F0,3B0,2B0\n")
    note = (f"{path}: its rows put stage 1 on rank 0, which neither looped placement (stage s on rank s "
            "mod p) nor vshape does: schedc models those two only")
    code, out, _ = run(capsys, "validate", str(path))
    assert code == 1 and note in out.splitlines() and out.splitlines()[-1] == "INVALID: 4 errors"
    code, _, err = run(capsys, "show", str(path))
    assert code == 1 and err.rstrip().endswith(note) and len(err.splitlines()) == 1
    code, out, _ = run(capsys, "validate", str(path), "--placement", "looped")
    assert code == 1 and "neither looped" not in out
    swapped = tmp_path / "swapped.csv"  # v = 1: no V to name
    swapped.write_text("1F0,1B0\n0F0,0B0\n")
    code, out, _ = run(capsys, "validate", str(swapped))
    said = (f"{swapped}: its rows put stage 0 on rank 1, where looped placement (stage s on rank s mod p) "
            "has rank 0: schedc models looped placements (and vshape, at v = 2) only")
    assert code == 1 and said in out.splitlines()
    twice = tmp_path / "twice.csv"
    twice.write_text("0F0,1F0,1B0,0B0\n2F0,3F0,3B0,1B0\n")
    code, out, _ = run(capsys, "validate", str(twice))
    assert code == 1 and "neither looped" not in out


def test_overlap_cells_are_said_to_run_one_after_the_other_and_to_be_written_apart(capsys, tmp_path):
    """torch's DualPipeV groups a forward and a backward in an OVERLAP_F_B cell; schedc times the
    parts one after the other, in the order listed, and writes them apart, which a custom overlap
    function would miss."""
    path, out_csv = tmp_path / "dpv.csv", str(tmp_path / "out.csv")
    path.write_text("0F0,0F1,(0B0;0F2)OVERLAP_F_B,0B1,0B2\n1F0,1B0,1F1,1B1,1F2,1B2\n")
    code, out, _ = run(capsys, "validate", str(path))
    assert code == 0 and "its 1 OVERLAP_F_B cell runs its parts one after the other, in the order" in out
    code, out, _ = run(capsys, "show", str(path), "--width", "60", "--csv", out_csv)
    assert code == 0 and out.count("OVERLAP_F_B cell runs its parts") == 1
    assert "r0 F0 F1 __ __ B0--- F2" in out  # B0 before F2, as listed
    assert "OVERLAP" not in Path(out_csv).read_text()
    plain = tmp_path / "plain.csv"
    plain.write_text("0F0,0F1,0B0,0F2,0B1,0B2\n1F0,1B0,1F1,1B1,1F2,1B2\n")
    assert "OVERLAP" not in run(capsys, "validate", str(plain))[1]


def test_a_fifo_plan_is_read_once(capsys, tmp_path):
    """The notes read the CSV a second time: show and validate of a named pipe waited forever."""
    text = "0F0,0F1,(0B0;0F2)OVERLAP_F_B,0B1,0B2\n1F0,1B0,1F1,1B1,1F2,1B2\n"
    for command in ("show", "validate"):
        fifo = tmp_path / f"{command}.csv"
        os.mkfifo(fifo)
        writer = threading.Thread(target=fifo.write_text, args=(text,), daemon=True)
        writer.start()
        code, out, _ = run(capsys, command, str(fifo), *(["--width", "60"] if command == "show" else []))
        writer.join(5)
        assert code == 0 and "OVERLAP_F_B cell runs its parts" in out and not writer.is_alive()


def test_the_note_on_where_m_came_from_comes_before_the_errors_it_explains(capsys, tmp_path):
    """One stray token (1F9 in a p=4 m=8 1F1B CSV) sets m to 10: the note naming it was printed
    after twenty "missing" errors and their count, where a reader saw it last (the format review)."""
    path = tmp_path / "stray.csv"
    assert run(capsys, "baseline", "1f1b", "--p", "4", "--m", "8", "--csv", str(path))[0] == 0
    rows = path.read_text().splitlines()
    rows[1] += ",1F9"
    path.write_text("\n".join(rows) + "\n")
    code, out, _ = run(capsys, "validate", str(path))
    first, second = out.splitlines()[:2]
    assert code == 1 and "m = 10 was taken from its largest microbatch index, in 1F9 on rank 1" in first
    assert second.endswith("rank 0 action 0F8: missing")
