"""Checks of a user's callback before it is first called: a function of the wrong arity would fail
with Python's own TypeError at its first call, mid-solve or mid-step (peers waiting there)."""

from __future__ import annotations

import inspect
from collections.abc import Callable

from schedc.errors import ArgumentError, shown


def check_callable(fn: object, name: str, usage: str, arity: int) -> None:
    """``fn`` is callable with ``arity`` positional arguments, else one line naming ``usage`` (say
    ``progress(event)``). Callables whose signature Python cannot read (some builtins) pass."""
    if not callable(fn):
        raise ArgumentError(f"{name} must be callable as {usage}, got {type(fn).__name__} {shown(fn)}")
    if isinstance(fn, type):  # nn.MSELoss without its (): calling it builds a module, it computes nothing
        raise ArgumentError(f"{name} must be callable as {usage}, got the class {fn.__name__}: give an "
                            f"instance ({fn.__name__}()) or a function")
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        return
    try:
        signature.bind(*[None] * arity)
    except TypeError as err:
        raise ArgumentError(f"{name} must be callable as {usage}, but {_named(fn, signature)} cannot be: "
                            f"{err}") from None


def _named(fn: Callable, signature: inspect.Signature) -> str:
    """The function with its parameters on one line, cut to a line's share (defaults may print long,
    over several lines)."""
    text = " ".join(f"{getattr(fn, '__name__', None) or type(fn).__name__}{signature}".split())
    return text if len(text) <= 80 else text[:80] + "..."
