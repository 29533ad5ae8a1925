"""The action IR: one compute task, written as torch.distributed.pipelining writes it (``2F0``).

A token is ``{stage}{kind}{microbatch}``: stage index first, then F (forward), I (input
gradient), W (weight gradient) or B (unsplit backward), then the microbatch index.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from schedc.errors import PlanFormatError

KINDS = ("F", "I", "W", "B")
_TOKEN = re.compile(r"([0-9]+)([FIWB])([0-9]+)")


class Action(NamedTuple):
    """One task: a pass of one microbatch through one stage. Plain data, hashable, ordered."""

    kind: str
    stage: int
    mb: int

    def __str__(self) -> str:
        return f"{self.stage}{self.kind}{self.mb}"

    @staticmethod
    def parse(token: str) -> Action:
        """Reads a token such as ``3I12``; anything else is a PlanFormatError."""
        match = _TOKEN.fullmatch(token.strip()) if isinstance(token, str) else None
        if match is None:
            raise PlanFormatError(f"unknown action token {token!r} (expected e.g. 0F3, 5I2, 5W2, 1B0)")
        stage, kind, mb = match.groups()
        try:
            return Action(kind, int(stage), int(mb))
        except ValueError:  # a number over Python's 4300-digit limit of int()
            raise PlanFormatError(f"action token {token.strip()[:12]!r}... has an index too long") from None
