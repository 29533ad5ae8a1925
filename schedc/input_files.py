"""Reading the text files users hand to schedc (plans, problem files, CSVs), with one size limit.

A path may name something that never ends (``/dev/zero``, a FIFO fed forever): reading at most
``MAX_BYTES + 1`` bytes turns that into a one-line error instead of an exhausted memory. A FIFO that
nobody writes blocks, as it does for ``cat``: process substitution (``<(...)``) needs FIFOs read.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any

from schedc.errors import ArgumentError, SchedcError, shown

MAX_BYTES = 512 * 2**20
"""Far above any real plan: a problem of schedc's 10-million-task limit writes about 300 MB."""


def checked_path(path: object, what: str, error: type[SchedcError]) -> str:
    """``path`` as a str: open(3) would use file descriptor 3, and a NUL character or a bytes path
    fails deep inside open() or tempfile with Python's own error. A path of the wrong type is an
    ArgumentError (a TypeError, as for any argument of the wrong type); a NUL, ``error``."""
    text = os.fspath(path) if isinstance(path, str | os.PathLike) else None
    article = "an" if what[:1] in tuple("aeiou") else "a"
    if not isinstance(text, str):
        raise ArgumentError(f"{article} {what} path must be a str or os.PathLike, got {type(path).__name__}")
    if "\0" in text:
        raise error(f"{article} {what} path cannot hold a NUL character, got {shown(text)}")
    return text


def read_text(path: str, what: str, error: type[SchedcError], keep_bom: bool = False) -> str:
    """The file's UTF-8 text; ``error`` (naming ``what``) when it cannot be read, is not UTF-8, or
    exceeds MAX_BYTES. A leading byte-order mark (Windows editors write one; tomllib and json refuse
    it) is dropped unless ``keep_bom``."""
    path = checked_path(path, what, error)
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_BYTES + 1)
    except OSError as err:
        raise error(f"cannot read {what} {path}: {err.strerror or err}") from None
    if len(data) > MAX_BYTES:
        raise error(f"{what} {path} is larger than {MAX_BYTES // 2**20} MiB")
    try:
        return data.decode("utf-8" if keep_bom else "utf-8-sig")
    except UnicodeDecodeError:
        raise error(f"{what} {path} is not UTF-8 text") from None


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"key {key!r} appears twice in one object")
        out[key] = value
    return out


def parse_json(text: str, parse_float: Callable[[str], Any] | None = None) -> Any:
    """``json.loads`` that refuses a key given twice in one object: plain JSON keeps the last one
    silently, so a hand-edited plan or problem with ``"mem"`` twice would run with whichever came
    last. Raises ValueError (JSONDecodeError among them) or RecursionError."""
    return json.loads(text, object_pairs_hook=_unique_keys, parse_float=parse_float, parse_int=_integer)


MAX_INT_DIGITS = 4300
"""Python's own limit on reading an integer from text (``sys.get_int_max_str_digits``)."""


def _integer(text: str) -> int:
    """An integer literal; past Python's limit, a message without its advice to raise the limit
    (``sys.set_int_max_str_digits``), which a user of the CLI cannot act on."""
    digits = len(text.lstrip("-"))
    if digits > MAX_INT_DIGITS:
        raise ValueError(f"an integer of {digits} digits (at most {MAX_INT_DIGITS})")
    return int(text)
