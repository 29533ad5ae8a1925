"""Running the schedc command line in-process, shared by the CLI test files."""

from __future__ import annotations

from schedc.cli import main

SEED = ["--p", "2", "--m", "4", "--no-split", "--tb", "1", "--tw", "0"]
"""The seed articles' example: two ranks, four microbatches, unsplit backward."""


def run(capsys, *argv: str) -> tuple[int, str, str]:
    """main() on argv; its exit code, stdout and stderr."""
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err
