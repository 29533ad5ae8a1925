"""Running the schedc command line in-process, shared by the CLI test files."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Callable

from schedc.cli import build_parser, main
from schedc.cli_problem import problem_from_args
from schedc.problem import Problem

SEED = ["--p", "2", "--m", "4", "--no-split", "--tb", "1", "--tw", "0"]
"""The seed articles' example: two ranks, four microbatches, unsplit backward."""


def run(capsys, *argv: str) -> tuple[int, str, str]:
    """main() on argv; its exit code, stdout and stderr."""
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def parse_problem(*argv: str) -> Problem:
    """The Problem that a command's problem options give (through ``compare``'s parser)."""
    return problem_from_args(build_parser().parse_args(["compare", *argv]))


LONG_SEARCH = ["solve", "--p", "6", "--m", "24", "--v", "2", "--mem", "1.5", "--tb", "2",
               "--time-limit", "120", "--workers", "1"]
"""A search that runs for minutes with a CP-SAT plan after a second or two."""


def signalled_search(signum: int, out: str,
                     preexec_fn: Callable[[], object] | None = None) -> tuple[int, str]:
    """``schedc`` LONG_SEARCH in a child process, sent ``signum`` once CP-SAT has reported a plan;
    its exit status and stdout."""
    cmd = [sys.executable, "-m", "schedc", *LONG_SEARCH, "-o", out]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"}, preexec_fn=preexec_fn)
    watchdog = threading.Timer(90, proc.kill)  # a silent solver would block readline forever
    watchdog.start()
    try:
        while "cp-sat" not in (line := proc.stderr.readline()):
            assert line, "solver ended (or was silent for 90 s) before reporting a CP-SAT solution"
        proc.send_signal(signum)
        stdout, _ = proc.communicate(timeout=60)
    finally:
        watchdog.cancel()
    return proc.returncode, stdout
