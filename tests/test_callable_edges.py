# sed -i '35s/len(text) <= 80/len(text) < 80/' schedc/callables.py
# sed -i '22s/except (TypeError, ValueError):/except TypeError:/' schedc/callables.py
"""check_callable at its edges: builtins whose signature Python cannot read, and the cut of a long
signature in its message."""

from __future__ import annotations

import inspect

import pytest

from schedc.callables import check_callable
from schedc.errors import ArgumentError


def test_builtins_without_a_readable_signature_pass() -> None:
    """max, next and getattr have no signature inspect can read (it raises ValueError for them, as
    TypeError for others): they pass, as documented, rather than raising from inside inspect."""
    for fn in (max, next, getattr):
        with pytest.raises(ValueError):  # the premise: else this would not reach the ValueError branch
            inspect.signature(fn)
        check_callable(fn, "progress", "progress(event)", 1)


def test_a_signature_of_exactly_eighty_characters_is_shown_whole() -> None:
    """The name and signature are cut after 80 characters with '...': one of exactly 80 lost
    nothing and gets no '...'; one of 81 shows its first 80 and the '...'."""

    def two(a: object, b: object) -> None:
        return None

    signature = str(inspect.signature(two))
    for length, cut in ((80, False), (81, True)):
        two.__name__ = "x" * (length - len(signature))
        text = two.__name__ + signature
        assert len(text) == length
        with pytest.raises(ArgumentError) as caught:
            check_callable(two, "progress", "progress(event)", 1)
        shown = text[:80] + "..." if cut else text
        assert f"but {shown} cannot be: missing a required argument" in str(caught.value)
