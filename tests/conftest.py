"""Test-wide hypothesis settings: no per-example deadline (CI machines are shared and noisy; speed is
measured by benchmarks, never asserted), and derandomised under CI so a red run reproduces; the
``repeatable`` fixture (and ``unguarded``) for one-worker tests that assert an exact answer."""

import contextlib
import os
from unittest import mock

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "schedc",
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    derandomize=bool(os.environ.get("CI")),
    print_blob=True,
)
settings.load_profile("schedc")


@pytest.fixture
def repeatable(monkeypatch):
    """Lifts the one-worker wall-clock guard (``wall_guard.WALL_GUARD``), which on a heavily loaded
    machine could cut one of two same-seed runs short, or a search before the answer a test expects:
    such tests then run searches bounded by deterministic time alone."""
    from schedc.solvers import wall_guard

    monkeypatch.setattr(wall_guard, "WALL_GUARD", 1000)


def unguarded() -> contextlib.AbstractContextManager:
    """``repeatable`` inside a hypothesis test, which cannot take a function-scoped fixture."""
    from schedc.solvers import wall_guard

    return mock.patch.object(wall_guard, "WALL_GUARD", 1000)


@pytest.fixture(autouse=True)
def _idle_machine(monkeypatch):
    """``schedc profile`` notes a busy machine on stderr (``cli_profile.busy_note``); tests that read
    its stderr line by line must not depend on the load other work puts on a CI machine."""
    from schedc import cli_profile

    monkeypatch.setattr(cli_profile, "load_average", lambda: None)


@pytest.fixture
def default_sigint():
    """SIGINT as an interactive Python has it (KeyboardInterrupt), whatever pytest inherited: a
    background job of a non-interactive shell ignores SIGINT, and Ctrl-C tests then saw nothing.
    Yields what a child process needs to get it too (``preexec_fn``): an ignored SIGINT survives exec."""
    import signal

    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield lambda: signal.signal(signal.SIGINT, signal.SIG_DFL)
    finally:
        signal.signal(signal.SIGINT, previous)
