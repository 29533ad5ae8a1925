"""Argument checks the benchmark scripts share: a bad value is one argparse line (exit 2) before any
work starts, and a trial run never replaces a committed result that the README quotes."""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
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


def seconds(text: str) -> float:
    """An argparse type: a time limit the solver takes (> 0, finite, at most ``MAX_TIME_LIMIT``),
    refused here rather than by ``solve`` after the machine's speed was measured."""
    from schedc.solvers.arguments import MAX_TIME_LIMIT

    value = positive(text)
    if not value <= MAX_TIME_LIMIT:
        raise argparse.ArgumentTypeError(f"must be at most {MAX_TIME_LIMIT:g} seconds, got {text}")
    return value


def pattern(text: str) -> str:
    """An argparse type: a regular expression."""
    try:
        re.compile(text)
    except re.error as err:
        raise argparse.ArgumentTypeError(f"not a regular expression ({err})") from None
    return text


def writable_file(text: str) -> str:
    """An argparse type: a file the run can write at its end (a folder, a missing folder or one it
    cannot write to failed there, after the whole run, with a traceback)."""
    path = Path(text)
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{text} is a folder: name a file")
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise argparse.ArgumentTypeError(f"{text}: there is no folder {folder}")
    if not os.access(folder, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
        raise argparse.ArgumentTypeError(f"{text} cannot be written")
    return text


def writable_folder(text: str) -> str:
    """An argparse type: a folder the run may create and write files in (an existing file there
    failed at the first file written)."""
    path = Path(text)
    if path.exists() and not path.is_dir():
        raise argparse.ArgumentTypeError(f"{text} is a file, not a folder")
    return text


def add_json_option(parser: argparse.ArgumentParser, committed: Path, what: str = "") -> None:
    """``--json``, its help naming the committed result that a default run writes (``json_path``)."""
    parser.add_argument("--json", help=f"output JSON (default: {committed.name} beside this script{what}, "
                        "for a run with no other option only: any other needs --json)")


def json_path(parser: argparse.ArgumentParser, args: argparse.Namespace, committed: Path) -> Path:
    """Where the result goes: ``--json`` if given (checked writable before the run); else the
    committed file, for a run of the default configuration only. Any other run without ``--json`` is
    refused before it starts, so that neither the committed result nor the trial's is lost."""
    if args.json:
        try:
            return Path(writable_file(args.json))
        except argparse.ArgumentTypeError as err:
            parser.error(f"argument --json: {err}")
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


def run_facts() -> dict:
    """What ties a result to its run: the commit and whether the tree had uncommitted changes, the
    date, the script's options and the OR-Tools version (the CP-SAT that ran)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        dirty = bool(subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                                    capture_output=True, text=True,
                                    cwd=Path(__file__).resolve().parent).stdout.strip())
    except OSError:
        dirty = None
    try:
        ortools = version("ortools")
    except PackageNotFoundError:
        ortools = None
    return {"commit": commit(), "dirty": dirty, "date": time.strftime("%Y-%m-%d %H:%M"),
            "argv": sys.argv[1:], "ortools": ortools}


def write_rows(out: Path, meta: dict, rows: list) -> None:
    """The benchmarks' JSON layout, {"meta": ..., "rows": [...]}, written and named on stdout; the
    meta always carries ``run_facts``."""
    out.write_text(json.dumps({"meta": {**run_facts(), **meta}, "rows": rows}, indent=1) + "\n")
    print(f"wrote {out}")
