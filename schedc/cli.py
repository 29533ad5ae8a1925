"""The ``schedc`` command line: the parser of every subcommand (each in its own module) and ``main``.

``main`` parses, dispatches to the subcommand's ``func`` and turns every ``SchedcError`` into one
line ``schedc: error: <message>`` on stderr with exit status 1; usage errors print one such line
too and exit 2.
Nothing here imports torch.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import os
import re
import sys
from collections.abc import Iterator
from typing import IO, Any, NoReturn

from schedc import __version__, cli_baselines, cli_profile, cli_show, cli_solve, cli_validate
from schedc.cli_problem import refuse_measured
from schedc.errors import SchedcError, printable, to_stderr
from schedc.write_signals import Terminated


class _Parser(argparse.ArgumentParser):
    """argparse with schedc's one-line errors: the message and where to read the usage, instead
    of a usage block; still exit status 2 (subcommand parsers are made of this class too)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # A value that starts with a minus and a digit (``--tf -1/-2``, ``--tb -1e3``) is a value, as
        # argparse takes ``-1``: it said "expected one argument" where the value's own error belongs.
        self._negative_number_matcher = re.compile(r"^-\.?\d")

    def error(self, message: str) -> NoReturn:
        command = self.prog.partition(" ")[2]
        where = f"{command}: " if command else ""
        self.exit(2, f"schedc: error: {where}{message} (see {self.prog} --help)\n")

    def _print_message(self, message: str, file: IO[str] | None = None) -> None:
        """As argparse's, except that a failed write (``--help > /dev/full``) is raised for ``main``
        to report, where argparse ignores it and exits 0 with nothing written; an error on a closed
        or broken stderr is lost alone (exit 2 still: None raised AttributeError, exit 1)."""
        if not message:
            return
        if file is None or file is sys.stderr:  # an error: a closed or broken stderr loses only it
            to_stderr(message.rstrip("\n"))
        else:
            file.write(message)


def build_parser() -> argparse.ArgumentParser:
    """Every subcommand's parser, built apart from ``main`` so tests and help checks can read it."""
    parser = _Parser(
        prog="schedc", description="Compile pipeline-parallel training schedules (F/I/W orders per rank).")
    parser.add_argument("--version", action="version", version=f"schedc {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    for command in (cli_baselines, cli_show, cli_validate, cli_solve, cli_profile):
        command.register(sub)  # in the order --help lists them
    return parser


def _one_line(err: BaseException) -> str:
    """The message on one line, with every other unprintable character escaped: a key or token read
    from a file may hold an escape sequence that would colour or rewrite the terminal line."""
    return printable(" ".join(str(err).split("\n")).strip()) or type(err).__name__


def _problem_file_hint(args: argparse.Namespace, extra: list[str]) -> str:
    """``schedc solve prob.toml`` reads as the README's ``schedc solve <problem>``: name the option
    (not where a plan is the positional input: a second file there may be another plan)."""
    files = [x for x in extra if not x.startswith("-") and x.lower().endswith((".toml", ".json"))]
    if "problem" not in vars(args) or "plan" in vars(args) or len(files) != 1:
        return ""
    return f"a problem file goes after --problem: schedc {args.command} --problem {files[0]}; "


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``schedc`` console script; returns the exit status."""
    with _escaped_streams():
        return _main(argv)


def _main(argv: list[str] | None) -> int:
    parser = build_parser()
    try:
        try:
            _refuse_dash_values(parser, sys.argv[1:] if argv is None else argv)
            args, extra = parser.parse_known_args(argv)
            refuse_measured(args)
            if extra:  # named here rather than by the top-level parser, with the subcommand's help
                parser.exit(2, f"schedc: error: {args.command}: unrecognized arguments: {' '.join(extra)} "
                               f"({_problem_file_hint(args, extra)}see schedc {args.command} --help)\n")
        except SystemExit as exit_:  # --help, --version (0) and usage errors (2)
            if sys.stdout is not None:  # None: started with stdout closed (>&-)
                sys.stdout.flush()
            return exit_.code if isinstance(exit_.code, int) else 2
        status = args.func(args) or 0
        sys.stdout.flush()  # a full disk shows here, where it can be reported, not at exit
        return status
    except SchedcError as err:
        to_stderr(f"schedc: error: {_one_line(err)}")
        return 1
    except KeyboardInterrupt:
        return 130
    except Terminated:  # SIGTERM unwound solve's writes (search_stops, write_signals): its status
        return 143
    except MemoryError:  # a limit such as ulimit -v, or the machine's memory
        to_stderr("schedc: error: out of memory: the problem or plan needs more than this process may use")
        return 1
    except RuntimeError as err:  # CP-SAT refused its threads or memory by the system (ulimit -v)
        if not any(why in str(err) for why in _REFUSED):
            raise
        to_stderr(f"schedc: error: the system refused a thread or memory ({_one_line(err)}): "
                  "give fewer workers or threads, or more memory")
        return 1
    except ImportError as err:  # Ctrl-C while OR-Tools' C++ module initialises surfaces as this
        if isinstance(err.__cause__ or err.__context__, KeyboardInterrupt):
            return 130
        raise
    except BrokenPipeError:  # e.g. `schedc show plan.json | head`: stop quietly
        _drop_stdout()
        return 1
    except OSError as err:  # stdout on a full disk or a failing device (files fail as SchedcError)
        if err.filename is not None or err.errno not in _WRITE_ERRNOS:
            to_stderr(f"schedc: error: {_one_line(err)}")  # a timeout, say: no traceback
            return 1
        _drop_stdout()
        to_stderr(f"schedc: error: cannot write the report to stdout: {err.strerror or err}")
        return 1


def _refuse_dash_values(parser: argparse.ArgumentParser, argv: list[str]) -> None:
    """``--p=--``: Python 3.11's argparse drops a value of ``--`` and stores an empty list, which no
    option's converter sees (a traceback from a parser, or the option silently unset); refused here as
    argparse refuses ``--p`` with no value."""
    for token in argv[:argv.index("--")] if "--" in argv else argv:
        if isinstance(token, str) and token.startswith("-") and token.endswith("=--"):
            parser.exit(2, f"schedc: error: argument {token[:-3]}: expected one argument, got '--'\n")


@contextlib.contextmanager
def _escaped_streams() -> Iterator[None]:
    """Text the streams' encoding cannot hold (a plan's source or a path with non-ASCII letters under
    ``PYTHONIOENCODING=ascii`` or a C locale) is written as escapes, not raised as a traceback; the
    streams' own setting comes back afterwards (``main`` called in a library user's process)."""
    changed = []
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(AttributeError, ValueError):  # not a text stream (a StringIO, None)
            old = stream.errors
            stream.reconfigure(errors="backslashreplace")
            changed.append((stream, old))
    try:
        yield
    finally:
        for stream, old in changed:
            with contextlib.suppress(OSError, ValueError):  # a stream closed or full: main said so
                stream.reconfigure(errors=old)


_REFUSED = ("Resource temporarily unavailable", "Cannot allocate memory", "bad_alloc")
"""What a RuntimeError from a C++ library (CP-SAT) says when the system refused it a thread or memory."""
_WRITE_ERRNOS = {errno.ENOSPC, errno.EIO, errno.EDQUOT, errno.EFBIG, errno.EBADF, errno.EINVAL}
"""What a failed write to stdout reports (a full disk, a quota, a device error, a stream closed or
opened read-only); other OSErrors (a measurement's timeout) are no write of the report."""


def _drop_stdout() -> None:
    """Points stdout at /dev/null, so that the flush at exit does not fail again with a traceback."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
