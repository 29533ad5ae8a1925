"""Layer ranges of the stages as text: ``0:3,3:8,8:12`` is stage 0 on layers [0, 3), stage 1 on
[3, 8), stage 2 on [8, 12), the ``bounds=`` of ``schedc.runtime.split_stages``.

``schedc profile --bounds`` reads them, so that uneven stages (an embedding's first stage, a loss
head's last) are measured as they will be trained; the file's header writes them back. Whether
they fit a model's layers is the runtime's check (``runtime.stages.check_bounds``)."""

from __future__ import annotations

import argparse
import re
from collections.abc import Sequence

_RANGE = re.compile(r"([0-9]{1,9}):([0-9]{1,9})")
"""One [start, end) range in ASCII digits (int() alone reads full-width digits and 4_0)."""


def parse_layer_ranges(text: str) -> tuple[tuple[int, int], ...]:
    """An argparse type: ``START:END`` ranges, comma separated, in stage order."""
    parts = text.split(",")
    matches = [_RANGE.fullmatch(part.strip()) for part in parts]
    if not all(matches):
        raise argparse.ArgumentTypeError("expected START:END layer ranges, one per stage, comma separated "
                                         f"(0:3,3:8,8:12), got {text!r:.80}")
    return tuple((int(m.group(1)), int(m.group(2))) for m in matches if m)


def format_layer_ranges(bounds: Sequence[tuple[int, int]]) -> str:
    """The text ``parse_layer_ranges`` reads back."""
    return ",".join(f"{lo}:{hi}" for lo, hi in bounds)
