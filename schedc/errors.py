"""Error types. Every user-facing failure is one of these, carrying a one-line message."""


class SchedcError(ValueError):
    """Base of every error the CLI turns into a one-line message and a non-zero exit."""


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


class InfeasibleError(SchedcError):
    """No schedule satisfies the constraints (for example a cap below one stage's activation)."""


def printable(text: str) -> str:
    """``text`` with each unprintable character (a tab, an escape sequence, a file name's undecodable
    byte) written as its escape, so a plan's source prints on one line and cannot colour a terminal."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def shown(value: object, limit: int = 40) -> str:
    """``repr(value)`` cut to ``limit`` characters: an error line quotes what was given without
    growing to the size of a pasted file or a 5,000-digit number."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."
