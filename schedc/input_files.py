"""Reading the text files users hand to schedc (plans, problem files, CSVs), with one size limit.

A path may name something that never ends (``/dev/zero``, a FIFO nobody closes): reading at most
``MAX_BYTES + 1`` bytes turns that into a one-line error instead of a hang or an exhausted memory.
"""

from __future__ import annotations

from schedc.errors import SchedcError

MAX_BYTES = 512 * 2**20
"""Far above any real plan: a problem of schedc's 10-million-task limit writes about 300 MB."""


def read_text(path: str, what: str, error: type[SchedcError]) -> str:
    """The file's UTF-8 text; ``error`` (naming ``what``) when it cannot be read, is not UTF-8, or
    exceeds MAX_BYTES."""
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_BYTES + 1)
    except OSError as err:
        raise error(f"cannot read {what} {path}: {err.strerror or err}") from None
    if len(data) > MAX_BYTES:
        raise error(f"{what} {path} is larger than {MAX_BYTES // 2**20} MiB")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise error(f"{what} {path} is not UTF-8 text") from None
