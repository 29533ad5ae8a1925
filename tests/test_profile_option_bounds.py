# sed -i '22s/math.floor(/math.ceil(/' schedc/byte_sizes.py
# sed -i '25s/size < 1/size < 0/' schedc/byte_sizes.py
# sed -i '125s/args.threads <= MAX_THREADS/args.threads < MAX_THREADS/' schedc/cli_profile.py
# sed -i '127s/args.repeats > MAX_REPEATS/args.repeats >= MAX_REPEATS/' schedc/cli_profile.py
# sed -i '38s/getloadavg()\[0\]/getloadavg()[1]/' schedc/profile_busy.py
"""The profile command's option bounds at their edges (what is refused before torch is imported and
what passes on to the measurement), and the load the busy-machine note reads."""

from __future__ import annotations

import argparse

import pytest

from schedc import cli_profile
from schedc.byte_sizes import parse_size as _size
from schedc.cli import main
from schedc.cli_profile import MAX_REPEATS, MAX_THREADS
from schedc.errors import SchedcError

REAL_LOAD_AVERAGE = cli_profile.load_average  # taken before conftest's idle machine stands in for it


def _stop_at_torch(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every option check passed: stop where profile would import torch, with a line to look for."""

    def stop() -> None:
        raise SchedcError("the options passed")

    monkeypatch.setattr(cli_profile, "_import_torch", stop)


def test_the_largest_thread_and_repeat_counts_allowed_pass_the_checks(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """--threads 1024 and --repeats 10,000 are within the documented [1, MAX] ranges: a check
    with < MAX or >= MAX refused them as out of range."""
    _stop_at_torch(monkeypatch)
    for flag, value in (("--threads", MAX_THREADS), ("--repeats", MAX_REPEATS)):
        assert main(["profile", "--p", "2", "--m", "2", flag, str(value)]) == 1
        assert capsys.readouterr().err == "schedc: error: the options passed\n"
        assert main(["profile", "--p", "2", "--m", "2", flag, str(value + 1)]) == 1
        assert f"{flag} must be within [1, " in capsys.readouterr().err


def test_an_activation_budget_is_whole_bytes_rounded_down_and_at_least_one() -> None:
    """A budget holds whole bytes: 1000.5 bytes hold 1000 (rounding up would allow a byte more
    than given), and half a byte or none is no budget at all (0 made every cap fail later)."""
    assert _size("1000.5") == 1000
    assert _size("1.0001KB") == 1000  # 1000.1 bytes
    assert _size("1.9") == 1
    for text in ("0", "0.5", "0KiB"):
        with pytest.raises(argparse.ArgumentTypeError, match="must be at least 1 byte"):
            _size(text)


def test_the_load_average_read_is_the_last_minutes(monkeypatch: pytest.MonkeyPatch) -> None:
    """The note is about the load the timing now competes with: the 1-minute average, the first of
    ``os.getloadavg``'s three, not the 5- or 15-minute one."""
    monkeypatch.setattr(cli_profile.os, "getloadavg", lambda: (6.0, 0.5, 0.25))
    assert REAL_LOAD_AVERAGE() == 6.0
