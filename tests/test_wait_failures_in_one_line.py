# sed -i '35s/(RuntimeError, TypeError)/(RuntimeError,)/' runtime/waits.py
# sed -i '50s/"timed out" in reason.lower() or //' runtime/waits.py
"""``waits.start`` and ``waits.wait`` turn a backend's failure into one PeerError line naming who
waited for what: the backend's first line (not its C++ stack), a TypeError from a backend that
cannot carry a tensor too, and any backend wording of a timeout as a PeerTimeoutError."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

pytest.importorskip("torch")

from schedc.runtime.errors import PeerError, PeerTimeoutError
from schedc.runtime.waits import start, wait


class _Failing:
    """A transfer whose wait raises what a backend raises, ``after`` seconds."""

    def __init__(self, err: Exception, after: float = 0.0) -> None:
        self.err, self.after = err, after

    def wait(self, timeout: object = None) -> None:
        time.sleep(self.after)
        raise self.err


def _raise(err: Exception) -> Callable[[], object]:
    def post() -> object:
        raise err
    return post


def test_a_backend_error_keeps_its_first_line_not_its_stack() -> None:
    """The first line says what failed; the lines after it are a C++ stack trace."""
    err = RuntimeError("[../gloo/transport/tcp/pair.cc:534] Connection closed by peer\n"
                       "Exception raised from recv at ../third_party/gloo.cpp:12 (most recent call first)")
    with pytest.raises(PeerError) as info:
        start(_raise(err), "rank 0 sent x to rank 1")
    assert str(info.value) == ("rank 0 sent x to rank 1: the transfer could not start "
                               "(Connection closed by peer)")
    with pytest.raises(PeerError) as info:
        wait(_Failing(err), 5.0, "rank 1 waited for x")
    assert str(info.value) == "rank 1 waited for x: the transfer failed (Connection closed by peer)"


def test_a_tensor_the_backend_cannot_carry_is_one_line() -> None:
    """NCCL raises TypeError for a dtype it lacks (int16): a PeerError, not a bare traceback."""
    with pytest.raises(PeerError, match=r"^rank 0 sent x to rank 1: the transfer could not start "
                                        r"\(no int16\)$"):
        start(_raise(TypeError("no int16")), "rank 0 sent x to rank 1")


def test_a_wait_that_timed_out_is_a_timeout_in_any_backend_wording() -> None:
    """gloo says "Timed out waiting ...", others "timeout": both mean nothing arrived in time."""
    for text in ("Timed out waiting 200ms for recv operation to complete", "Operation timeout"):
        with pytest.raises(PeerTimeoutError, match=r"^rank 1 waited for x: nothing arrived within 0.2 s$"):
            wait(_Failing(RuntimeError(text), after=0.2), 0.2, "rank 1 waited for x")


def test_a_timeout_well_before_the_runners_is_the_process_groups() -> None:
    """A gloo collective also ends at the process group's own timeout: init_process_group(timeout=3 s)
    under a runner's 30 s said "nothing arrived within 30 s" after 3 s (found by an acceptance tester)."""
    with pytest.raises(PeerTimeoutError, match=r"^rank 1 waited for x: nothing arrived within [0-9.e-]+ s, "
                                               r"the process group's own timeout \(shorter than the "
                                               r"runner's 30 s\)$"):
        wait(_Failing(RuntimeError("Timed out waiting 3000ms")), 30.0, "rank 1 waited for x")
