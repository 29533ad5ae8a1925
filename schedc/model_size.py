"""What ``schedc profile`` would allocate, checked against the machine's memory before torch tries.

A model or input far beyond memory does not fail cleanly in torch: it raises ``std::bad_alloc``
from deep inside a layer's constructor, or exhausts memory so that even the error handler cannot
allocate. Counting the bytes first turns that into one line naming the flags to shrink.
"""

from __future__ import annotations

import math
import os

from schedc.errors import SchedcError

FLOAT_BYTES = 4
"""The demo models and the default input are float32."""


def physical_memory() -> int | None:
    """The machine's memory in bytes, None where the OS does not say (the check is then skipped)."""
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def demo_parameters(model: str, layers: int, width: int, seq: int, vocab: int) -> int:
    """Parameter count of the demo model ``runtime.models`` builds (``seq`` and ``vocab`` are the
    transformer's)."""
    w = width
    if model == "mlp":
        return layers * (w * w + w)  # Linear(w, w) + Tanh per block
    block = 12 * w * w + 13 * w  # attention in/out projections, 4w MLP, two LayerNorms
    return layers * block + (vocab + seq) * w + (w + 1) * vocab + 2 * w


def check_fits(size: int, what: str, advice: str) -> None:
    """``SchedcError`` when ``size`` bytes exceed the machine's memory: no allocation could succeed."""
    total = physical_memory()
    if total is not None and size > total:
        raise SchedcError(f"{what} would take {_gib(size)}, more than this machine's {_gib(total)} of "
                          f"memory: {advice}")


def tensor_bytes(shape: tuple[int, ...], item_bytes: int) -> int:
    """Bytes of a dense tensor, computed in Python integers (torch overflows past 2**63 elements)."""
    return math.prod(shape) * item_bytes


def _gib(size: int) -> str:
    gib = size / 2**30
    return f"{gib:.3g} GiB" if gib < 999.5 else f"{gib:,.0f} GiB"  # not 2.68e+04
