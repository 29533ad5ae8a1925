"""The CLI's output streams: a closed, full or broken stdout or stderr, text they cannot encode,
control characters from a file: one line, the outputs written first, never a traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from schedc.baselines import baseline_plan
from schedc.errors import SchedcError
from schedc.plan_json import plan_text
from schedc.problem import Problem
from tests.cli_helpers import SEED, run


def _schedc_in_shell(tmp_path, redirect: str) -> subprocess.CompletedProcess:
    main = f"{sys.executable} -c 'import sys; from schedc.cli import main; sys.exit(main(sys.argv[1:]))'"
    command = f"{main} baseline 1f1b --p 4 --m 8 -o out.json --csv out.csv {redirect}"
    return subprocess.run(["sh", "-c", command], cwd=tmp_path, capture_output=True, text=True)


def test_a_closed_stdout_is_one_line_and_the_outputs_are_written_first(tmp_path):
    result = _schedc_in_shell(tmp_path, ">&-")
    assert result.returncode == 1 and result.stderr.strip().splitlines() == [
        "schedc: error: stdout is closed, so the report cannot be printed (output files, if any, are written "
        "before it)"]
    assert sorted(os.listdir(tmp_path)) == ["out.csv", "out.json"]


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full (Linux)")
def test_a_full_stdout_is_one_line_and_the_outputs_are_written_first(tmp_path):
    result = _schedc_in_shell(tmp_path, "> /dev/full")
    assert result.returncode == 1 and result.stderr.strip().splitlines() == [
        "schedc: error: cannot write the report to stdout: No space left on device"]
    assert sorted(os.listdir(tmp_path)) == ["out.csv", "out.json"]


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full (Linux)")
@pytest.mark.parametrize("argv", ["--help", "--version", "solve --help"])
def test_help_on_a_full_stdout_is_one_line_not_a_silent_success(argv):
    """argparse ignores a failed write of its help and exits 0 with nothing written."""
    main = f"{sys.executable} -c 'import sys; from schedc.cli import main; sys.exit(main(sys.argv[1:]))'"
    done = subprocess.run(["sh", "-c", f"{main} {argv} > /dev/full"], capture_output=True, text=True)
    assert done.returncode == 1 and done.stderr.splitlines() == [
        "schedc: error: cannot write the report to stdout: No space left on device"]


def test_an_oserror_that_is_no_write_of_the_report_is_named_as_itself(capsys, monkeypatch):
    """A timeout (an OSError) of profile's latency measurement is not a full stdout: one line with
    its own text, and stdout stays usable."""
    pytest.importorskip("torch")

    def hang(*_args, **_kwargs):
        raise TimeoutError("ranks [0, 1] did not finish within 120 s")

    monkeypatch.setattr("schedc.runtime.message_costs.run_local", hang)
    code, _, err = run(capsys, "profile", "--p", "2", "--m", "2", "--layers", "2", "--width", "8",
                       "--repeats", "1")
    assert code == 1 and err == "schedc: error: ranks [0, 1] did not finish within 120 s\n"
    print("still here")
    assert capsys.readouterr().out == "still here\n"


def test_a_reader_that_stops_early_does_not_lose_the_outputs(tmp_path):
    """``| true``: the report meets a broken pipe; the files were written before it."""
    result = _schedc_in_shell(tmp_path, "| true")
    assert result.returncode == 0 and result.stderr == ""  # the pipeline's status is true's
    assert sorted(os.listdir(tmp_path)) == ["out.csv", "out.json"]


def test_progress_on_a_broken_stderr_stops_the_lines_not_the_search(tmp_path, monkeypatch, capsys):
    class Broken:
        def write(self, _text: str) -> int:
            raise BrokenPipeError(32, "Broken pipe")

        def flush(self) -> None:
            raise BrokenPipeError(32, "Broken pipe")

    with monkeypatch.context() as patch:
        patch.setattr(sys, "stderr", Broken())
        code, out, _ = run(capsys, "solve", *SEED, "--time-limit", "5", "-o", str(tmp_path / "p.json"))
    assert code == 0 and "wrote" in out and (tmp_path / "p.json").exists()
    code, _, err = run(capsys, "solve", *SEED, "--time-limit", "5")  # the next run prints again
    assert code == 0 and "best" in err


def test_a_write_that_fails_after_the_path_checks_still_gets_the_report(capsys, tmp_path, monkeypatch):
    """Outputs are written before the report, but a plan over its cap (-o refused) or a directory
    gone during a search must not take the report (the search's result) with it."""
    code, out, err = run(capsys, "baseline", "gpipe", "--p", "4", "--m", "8", "--mem", "2",
                         "-o", str(tmp_path / "x.json"))
    assert code == 1 and "peak activation per rank: 8 8 8 8" in out and "does not fit the cap" in err

    def gone(_items):
        raise SchedcError(f"cannot write {tmp_path}/d/p.json: No such file or directory")

    monkeypatch.setattr("schedc.cli_outputs.write_files", gone)
    code, out, err = run(capsys, "solve", *SEED, "--quiet", "-o", str(tmp_path / "p.json"))
    assert code == 1 and "makespan" in out and "solved in" in out and "wrote" not in out
    assert "cannot write" in err


def test_control_characters_from_a_file_are_escaped_in_the_error_line(capsys, tmp_path):
    """An escape sequence in a problem file's key reached the terminal as-is (colouring it)."""
    path = tmp_path / "e.json"
    path.write_text('{"p": 2, "m": 4, "\\u001b[31mRED": 1, "a\\rb": 2}')
    code, _, err = run(capsys, "compare", "--problem", str(path))
    assert code == 1 and "\x1b" not in err and "\r" not in err
    assert "unknown problem field(s): \\x1b[31mRED, a\\rb;" in err


def test_text_the_streams_cannot_encode_is_escaped_not_a_traceback(tmp_path):
    """Under an ASCII stdout a plan's non-ASCII source (show) or an output path's ("wrote ...") raised
    UnicodeEncodeError with a traceback after the work was done."""
    plan = json.loads(plan_text(baseline_plan("1f1b", Problem(p=2, m=2))))
    plan["source"] = "r\u00e9sum\u00e9 \u6f22"
    (tmp_path / "uni.json").write_text(json.dumps(plan))
    folder = tmp_path / "dir_\u00e9"
    folder.mkdir()
    env = {**os.environ, "PYTHONIOENCODING": "ascii"}
    main = [sys.executable, "-c", "import sys; from schedc.cli import main; sys.exit(main())"]
    show = subprocess.run([*main, "show", str(tmp_path / "uni.json")], capture_output=True, text=True,
                          env=env)
    assert show.returncode == 0 and show.stderr == ""
    assert show.stdout.startswith("r\\xe9sum\\xe9 \\u6f22 (heuristic)")
    wrote = subprocess.run([*main, "baseline", "gpipe", "--p", "2", "--m", "2", "-o", str(folder / "o.json")],
                           capture_output=True, text=True, env=env)
    assert wrote.returncode == 0 and wrote.stderr == "" and "dir_\\xe9" in wrote.stdout
    assert (folder / "o.json").exists()


def test_main_in_a_process_gives_the_streams_their_own_error_handling_back(capsys):
    """main() set the streams to write escapes for good: a library user's own prints after calling
    it in-process changed too."""
    from schedc.cli import main

    before = (sys.stdout.errors, sys.stderr.errors)
    assert before[0] != "backslashreplace"
    assert main(["baseline", "1f1b", "--p", "2", "--m", "2"]) == 0
    assert (sys.stdout.errors, sys.stderr.errors) == before
