"""The benchmarks check where they will write, and their options, before any work: a folder, a
missing folder or a file given for a folder failed only at the end of a run (up to 28 minutes) with
a traceback, the result lost; a width the data-parallel model cannot split among its heads failed in
every rank; without torch the torch benchmarks ended in a traceback, --help included."""

from __future__ import annotations

import argparse
import subprocess
import sys

import pytest

from tests.benchmark_scripts import BENCHMARKS, load_benchmark


def test_an_output_file_is_checked_writable_when_it_is_read(tmp_path):
    bench_args = load_benchmark("bench_args")
    assert bench_args.writable_file(str(tmp_path / "r.json")) == str(tmp_path / "r.json")
    for text, message in ((str(tmp_path), "is a folder: name a file"),
                          (str(tmp_path / "no" / "r.json"), f"there is no folder {tmp_path / 'no'}")):
        with pytest.raises(argparse.ArgumentTypeError, match=message):
            bench_args.writable_file(text)
    (tmp_path / "afile").write_text("")
    with pytest.raises(argparse.ArgumentTypeError, match="afile is a file, not a folder"):
        bench_args.writable_folder(str(tmp_path / "afile"))
    assert bench_args.writable_folder(str(tmp_path / "new")) == str(tmp_path / "new")


@pytest.mark.parametrize(("script", "args", "message"), [
    ("solver_quality.py", ["--only", "p2-m2", "--json", "{tmp}"], "argument --json: {tmp} is a folder"),
    ("deep_stages.py", ["--json", "{tmp}"], "argument --json: {tmp} is a folder"),
    ("long_runs.py", ["--json", "{tmp}"], "argument --json: {tmp} is a folder"),
    ("periodic_middle.py", ["--only", "x", "--k", "3", "--period", "10", "--json", "m.json", "--plans",
                            "{tmp}/afile"], "argument --plans: {tmp}/afile is a file, not a folder"),
    ("data_parallel.py", ["--width", "30"], "argument --width: must be a multiple of the 4 attention heads"),
    ("solver_quality.py", ["--time-limit", "inf", "--json", "q.json"], "must be at most 1e+09 seconds"),
    ("steady_state.py", ["--time-limit", "2e9"], "argument --time-limit: must be at most 1e+09 seconds"),
    ("recv_ahead.py", ["--aheads", "4,-1", "--json", "r.json"],
     "argument --aheads: must be integers >= 0 separated by commas, got '4,-1'"),
    ("recv_ahead.py", ["--steps", "3"], "(--steps) needs --json FILE"),
    ("soundness_fuzz.py", ["--problems", "3", "--json", "{tmp}"], "argument --json: {tmp} is a folder"),
    ("soundness_fuzz.py", ["--problems", "3"], "(--problems) needs --json FILE"),
    ("soundness_fuzz.py", ["--long", "-1", "--json", "f.json"], "argument --long: must be an integer >= 0"),
    ("soundness_fuzz.py", ["--max-tasks", "50", "--json", "f.json"],
     "argument --max-tasks: must be an integer >= 100: fewer are seldom drawn"),
    ("soundness_fuzz.py", ["--min-tasks", "1537", "--max-tasks", "3000", "--json", "f.json"],
     "no problem of 1537 to 3000 tasks in 10000 draws (the largest drawn have 1536 tasks)"),
])
def test_scripts_refuse_before_any_work(tmp_path, script, args, message):
    (tmp_path / "afile").write_text("")
    argv = [a.replace("{tmp}", str(tmp_path)) for a in args]
    run = subprocess.run([sys.executable, str(BENCHMARKS / script), *argv], capture_output=True, text=True,
                         timeout=120, cwd=tmp_path)
    assert run.returncode == 2 and message.replace("{tmp}", str(tmp_path)) in run.stderr
    assert "Traceback" not in run.stderr


def test_a_torch_benchmark_without_torch_is_one_line(tmp_path):
    blocker = tmp_path / "sitecustomize.py"  # imported at start-up: torch's import then fails
    blocker.write_text("import sys\n"
                       "class _Block:\n"
                       "    def find_spec(self, name, path=None, target=None):\n"
                       "        if name == 'torch' or name.startswith('torch.'):\n"
                       "            raise ImportError(\"No module named 'torch'\")\n"
                       "sys.meta_path.insert(0, _Block())\n")
    env = {"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"}
    run = subprocess.run([sys.executable, str(BENCHMARKS / "fused_backward.py"), "--help"],
                         capture_output=True, text=True, timeout=120, env=env)
    assert run.returncode == 1 and "Traceback" not in run.stderr
    assert run.stderr.strip().endswith("this benchmark needs torch: pip install torch==2.13.0 (the README "
                                       "says which index has the CPU build)")


def test_every_written_result_names_its_run(tmp_path):
    """A result JSON without its commit, date, options or CP-SAT version could not be tied to the
    run that made it (the benchmark review found several); write_rows adds them to every meta."""
    import json

    bench_args = load_benchmark("bench_args")
    out = tmp_path / "r.json"
    bench_args.write_rows(out, {"seed": 3}, [{"x": 1}])
    meta = json.loads(out.read_text())["meta"]
    assert meta["seed"] == 3 and {"commit", "dirty", "date", "argv", "ortools"} <= set(meta)
    assert meta["ortools"] and len(meta["date"]) == len("2026-12-07 11:08")
