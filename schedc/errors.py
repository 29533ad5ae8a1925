"""Error types. Every user-facing failure is one of these, carrying a one-line message."""

import contextlib
import datetime
import math
import re
import sys


class SchedcError(ValueError):
    """Base of every error the CLI turns into a one-line message and a non-zero exit. A message is
    kept on one line here too: a newline in a quoted path or name is written as its escape."""

    def __init__(self, message: object = "", *args: object) -> None:
        if isinstance(message, str):
            message = message.translate(_ESCAPED)
        super().__init__(message, *args)


_ESCAPED = {ord(c): repr(c)[1:-1] for c in "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029\x1b"}
"""What ``str.splitlines`` breaks a line at, and the escape that starts a terminal's colour codes."""


class ProblemError(SchedcError):
    """The problem description is inconsistent (counts, placement, costs, caps)."""


class PlanFormatError(SchedcError):
    """A plan file (JSON or CSV) or an action token cannot be parsed."""


class ScheduleError(SchedcError):
    """A per-rank order is not a valid schedule of the problem (missing task, deadlock, ...).
    ``errors``: every error found, where the message shows only the first."""

    def __init__(self, message: str, errors: list[str] | None = None) -> None:
        super().__init__(message)
        self.errors = errors or [message]


class ArgumentError(SchedcError, TypeError):
    """A library call got an argument of the wrong type (a Problem where a Plan belongs, say): one
    line like every schedc error, and a TypeError too, so ``except TypeError`` still catches it."""


class InfeasibleError(SchedcError):
    """No schedule satisfies the constraints (for example a cap below one stage's activation)."""


def printable(text: str) -> str:
    """``text`` with each unprintable character (a tab, an escape sequence, a file name's undecodable
    byte) written as its escape, so a plan's source prints on one line and cannot colour a terminal."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """``"1 rank"``, ``"3 ranks"``: a count in an error line, its noun in the right number
    (``plural`` where adding an s is not it: microbatches)."""
    return f"{count} {noun if count == 1 else plural or noun + 's'}"


def shown(value: object, limit: int = 40) -> str:
    """``repr(value)`` cut to ``limit`` characters: an error line quotes what was given without
    growing to the size of a pasted file or a 5,000-digit number. A repr over several lines (a numpy
    array's) is joined into one, so the error stays one line. A cut string keeps its closing quote."""
    text = re.sub(r"\s*[\r\n]\s*", " ", _repr(value))
    if len(text) <= limit:
        return text
    return text[:limit] + "..." + (text[0] if isinstance(value, str) else "")


def _repr(value: object) -> str:
    """``repr(value)``, or a description where repr fails: an int past the 4300 digits str() writes.
    A date or time (TOML has them: ``tf = 1979-05-27``) reads as written, not as Python's repr."""
    if isinstance(value, (datetime.date, datetime.time)):  # a datetime is a date
        return _toml_time(value)
    try:
        return repr(value)
    except ValueError:
        if isinstance(value, int):
            return f"an integer of about {int(value.bit_length() * math.log10(2)) + 1} digits"
        return f"a {type(value).__name__} too large to print"


def _toml_time(value: datetime.date | datetime.time) -> str:
    """A date or time as TOML writes it: ``07:32:00.5`` (not ``.500000``), ``Z`` for UTC."""
    text = value.isoformat().replace("+00:00", "Z")
    if "." in text:
        whole, _, rest = text.partition(".")
        digits = rest[:6].rstrip("0")  # microseconds, then any offset
        text = f"{whole}.{digits}{rest[6:]}" if digits else whole + rest[6:]
    kind = "datetime" if isinstance(value, datetime.datetime) else type(value).__name__
    return f"the {kind} {text}"


def to_stderr(line: str) -> None:
    """A note or error on stderr, unless it is gone (None: ``print`` would write it to stdout, into
    the report) or broken (``2>&1 >&3 | true``: the report on stdout then still goes out)."""
    if sys.stderr is None:
        return
    with contextlib.suppress(OSError):  # BrokenPipeError among them
        print(line, file=sys.stderr, flush=True)


TORCH_INSTALL = "pip install torch==2.13.0 (the README says which index has the CPU build)"
"""What to run where torch is missing: ``import schedc.runtime`` and ``schedc profile`` say it alike."""
