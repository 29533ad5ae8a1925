"""Byte counts as ``schedc profile`` reads them (``--activation-budget 40GiB``) and prints them."""

from __future__ import annotations

import argparse
import math
import re
from fractions import Fraction

UNITS = {"": 1, "b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
         "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}


def parse_size(text: str) -> int:
    """--activation-budget: a byte count with an optional unit (KB = 1000 bytes, KiB = 1024)."""
    found = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:[eE]\+?[0-9]+)?)\s*([a-zA-Z]*)\s*", text)
    factor = UNITS.get(found.group(2).lower()) if found else None
    if factor is None:
        raise argparse.ArgumentTypeError(f"expected bytes such as 40GiB, 512MB or 1e9, got {text!r}")
    if float(found.group(1)) * factor >= 2**65:  # float first: Fraction('1e30000000') takes seconds
        raise argparse.ArgumentTypeError(f"must be below 16 EiB (2**64 bytes), got {text!r}")
    size = math.floor(Fraction(found.group(1)) * factor)
    if size >= 2**64:  # exactly: a float rounds 2**64 - 1 up to 2**64
        raise argparse.ArgumentTypeError(f"must be below 16 EiB (2**64 bytes), got {text!r}")
    if size < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1 byte, got {text!r}")
    return size


def format_bytes(size: int) -> str:
    """1536 -> '1.5 KiB', 1048575 -> '1024 KiB': bytes as the summary prints them."""
    for unit, scale in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if size >= scale:
            value = size / scale
            return f"{value:.3g} {unit}" if value < 999.5 else f"{value:.0f} {unit}"  # not 1e+03
    return f"{size} B"
