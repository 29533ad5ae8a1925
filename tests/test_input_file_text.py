# sed -i '27s/if not isinstance(text, str):/if text is None:/' schedc/input_files.py
# sed -i '75s/digits = len(text.lstrip("-"))/digits = len(text)/' schedc/input_files.py
"""Reading input files at their edges: a path object whose __fspath__ gives bytes, and a negative
integer at Python's digit limit."""

from __future__ import annotations

import json
import re

import pytest

from schedc.errors import ArgumentError
from schedc.input_files import MAX_INT_DIGITS, parse_json
from schedc.problem_io import load_problem


class _BytesPath:
    """An os.PathLike whose path is bytes: open() would take it, schedc's messages cannot."""

    def __fspath__(self) -> bytes:
        return b"problem.toml"


def test_a_pathlike_of_bytes_is_a_one_line_error_not_a_type_error() -> None:
    """``os.fspath`` of a PathLike may return bytes: the check must be on the type of the text,
    else ``"\\0" in text`` raised a bare TypeError (a traceback) instead of naming the path type."""
    says = "problem file path must be a str or os.PathLike, got _BytesPath"
    with pytest.raises(ArgumentError, match=re.escape(says)):
        load_problem(_BytesPath())


def test_a_negative_integer_at_the_digit_limit_reads_as_python_reads_it() -> None:
    """The limit counts digits, as Python's own does (``int("-" + "1" * 4300)`` works): counting
    the sign refused a number Python accepts and reported one digit too many."""
    digits = "7" * MAX_INT_DIGITS
    assert parse_json("-" + digits) == -int(digits)
    assert parse_json(json.dumps({"x": [-1, 2]})) == {"x": [-1, 2]}
    with pytest.raises(ValueError, match=f"an integer of {MAX_INT_DIGITS + 1} digits"):
        parse_json("-" + digits + "7")
