"""Argument checks the benchmark scripts share: a bad value is one argparse line (exit 2) before any
work starts, and a trial run never replaces a committed result that the README quotes."""

from __future__ import annotations

import argparse
import re
import subprocess
from collections.abc import Callable
from pathlib import Path


def at_least(least: int, why: str = "") -> Callable[[str], int]:
    """An argparse type: an integer >= ``least`` (``why`` says what the limit protects)."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = None
        if value is None or value < least:
            raise argparse.ArgumentTypeError(f"must be an integer >= {least}{why}, got {text!r}")
        return value
    return parse


def positive(text: str) -> float:
    """An argparse type: a number > 0 (0 or less would silently mean a default, or nothing)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number, got {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {text}")
    return value


def pattern(text: str) -> str:
    """An argparse type: a regular expression."""
    try:
        re.compile(text)
    except re.error as err:
        raise argparse.ArgumentTypeError(f"not a regular expression ({err})") from None
    return text


def json_path(parser: argparse.ArgumentParser, args: argparse.Namespace, committed: Path) -> Path:
    """Where the result goes: ``--json`` if given; else the committed file, for a run of the default
    configuration only. Any other run without ``--json`` is refused before it starts, so that neither
    the committed result nor the trial's is lost."""
    if args.json:
        return Path(args.json)
    changed = [f"--{key.replace('_', '-')}" for key, value in vars(args).items()
               if key != "json" and value != parser.get_default(key)]
    if changed:
        parser.error(f"a configuration other than the default ({', '.join(changed)}) needs --json FILE: "
                     f"the default, {committed.parent.name}/{committed.name}, holds the committed result")
    return committed


def commit() -> str | None:
    """The checked-out commit, so that a result names the code that produced it (None outside git)."""
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              cwd=Path(__file__).resolve().parent).stdout.strip() or None
    except OSError:
        return None
