"""Reading the text files users hand to schedc (plans, problem files, CSVs), with one size limit.

A path may name something that never ends (``/dev/zero``, a FIFO nobody closes): reading at most
``MAX_BYTES + 1`` bytes turns that into a one-line error instead of a hang or an exhausted memory.
"""

from __future__ import annotations

import json
import os
from typing import Any

from schedc.errors import SchedcError

MAX_BYTES = 512 * 2**20
"""Far above any real plan: a problem of schedc's 10-million-task limit writes about 300 MB."""


def read_text(path: str, what: str, error: type[SchedcError]) -> str:
    """The file's UTF-8 text; ``error`` (naming ``what``) when it cannot be read, is not UTF-8, or
    exceeds MAX_BYTES."""
    if not isinstance(path, str | os.PathLike):  # open(3) would read file descriptor 3
        raise error(f"a {what} path must be a str or os.PathLike, got {type(path).__name__}")
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


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"key {key!r} appears twice in one object")
        out[key] = value
    return out


def parse_json(text: str) -> Any:
    """``json.loads`` that refuses a key given twice in one object: plain JSON keeps the last one
    silently, so a hand-edited plan or problem with ``"mem"`` twice would run with whichever came
    last. Raises ValueError (JSONDecodeError among them) or RecursionError."""
    return json.loads(text, object_pairs_hook=_unique_keys)
