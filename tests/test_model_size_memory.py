# sed -i '22s/ \* os.sysconf("SC_PAGE_SIZE")//' schedc/model_size.py
"""The machine's memory that ``schedc profile`` checks sizes against is counted in bytes."""

from __future__ import annotations

from pathlib import Path

import pytest

from schedc.model_size import physical_memory


def test_physical_memory_is_the_kernels_total_in_bytes() -> None:
    """/proc/meminfo's MemTotal (kB) is the same total: a count of pages instead of bytes made the
    machine 4096 times smaller, and refused every model over a few MB as "more than this machine's
    memory"."""
    meminfo = Path("/proc/meminfo")
    if not meminfo.exists():
        pytest.skip("no /proc/meminfo (not Linux)")
    fields = dict(line.split(":", 1) for line in meminfo.read_text().splitlines() if ":" in line)
    value, unit = fields["MemTotal"].split()
    assert unit == "kB"
    total = int(value) * 1024
    assert total / 2 <= physical_memory() <= total * 2  # the same total up to the kernel's rounding
