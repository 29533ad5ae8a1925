"""Imported before torch by the benchmarks that measure with it: without torch they end in one line
and exit 1 (their top-level ``import torch`` gave a traceback, ``--help`` included), as ``schedc
profile`` does."""

from __future__ import annotations

import sys

try:
    import torch  # noqa: F401
except ImportError:
    sys.exit(f"{sys.argv[0]}: error: this benchmark needs torch: pip install torch==2.13.0 (the README "
             "says which index has the CPU build)")
