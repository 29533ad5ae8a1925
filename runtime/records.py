"""What a recording step leaves on its runner: a ``Span`` per action (``record=True``, the
measured counterpart of the simulator's slots) and a ``Held`` per action (``record_memory=True``,
the measured counterpart of its memory curve)."""

from __future__ import annotations

from typing import NamedTuple

from schedc.actions import Action


class Held(NamedTuple):
    """Bytes this rank holds after an action (``record_memory``): activations, which the plan's caps
    govern, and other (messages and losses), which they do not."""

    action: Action
    activations: int
    other: int


class Span(NamedTuple):
    """One recorded action: seconds from the step's start, and the part spent waiting for input."""

    action: Action
    start: float
    end: float
    waited: float
