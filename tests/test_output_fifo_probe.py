# sed -i '103s/real.exists() and not real.is_file()/real.exists() and real.is_file()/' schedc/output_paths.py
"""The output check on a FIFO: it must not open it (an open for writing blocks until a reader comes)."""

from __future__ import annotations

import contextlib
import os
import threading
from pathlib import Path

from schedc.output_paths import check_writable


def test_checking_a_fifo_output_does_not_block_on_it(tmp_path: Path) -> None:
    """``-o`` naming a FIFO with no reader: the check asks for write permission and returns; opening
    it to probe (as for a regular file) would hang the command before the search starts."""
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    done = threading.Event()

    def check() -> None:
        check_writable(str(fifo), "-o")
        done.set()

    worker = threading.Thread(target=check, daemon=True)
    worker.start()
    worker.join(10)
    blocked = worker.is_alive()
    if blocked:  # release the probe's open() with a reader, so the thread ends
        with contextlib.suppress(OSError):
            os.close(os.open(fifo, os.O_RDONLY | os.O_NONBLOCK))
        worker.join(10)
    assert not blocked and done.is_set()
