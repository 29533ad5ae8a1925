"""Running the schedc command line in-process, shared by the CLI test files."""

from __future__ import annotations

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
