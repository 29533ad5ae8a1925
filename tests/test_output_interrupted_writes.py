"""Writes that cannot be all-or-nothing by renaming: a file rewritten in place (another owner's, or
in a folder schedc cannot add a file to) keeps its old content when its write fails, and SIGTERM
while outputs are written leaves no temporaries (hidden files of megabytes, job after job)."""

from __future__ import annotations

import errno
import os
import signal
import stat
import subprocess
import sys
from pathlib import Path
from unittest import mock

import pytest

from schedc import in_place_writes, output_paths
from schedc.errors import SchedcError

SCRIPT = """
import os, resource, signal, sys
from unittest import mock
from schedc import output_paths
os.chdir(sys.argv[1])
Path = __import__("pathlib").Path
Path("shared.json").write_text('{"old": 1}')
if sys.argv[2] == "term":
    real = os.replace
    def replace(*args):
        os.kill(os.getpid(), signal.SIGTERM)
        return real(*args)
    os.replace = replace
    output_paths.write_files([("a.json", "x" * 100000), ("b.csv", "y" * 100000)])
    print("survived")
else:
    resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))  # Python ignores SIGXFSZ: EFBIG
    with mock.patch.object(output_paths, "_in_place", return_value=True):
        try:
            output_paths.write_files([("shared.json", "x" * 10000)])
        except Exception as err:
            print(err)
print(Path("shared.json").read_text()[:20])
"""


def _run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path), *args], capture_output=True,
                          text=True, timeout=60)


def test_a_size_limit_leaves_the_old_content(tmp_path):
    """A colleague's result was cut to the 4 KB the limit allowed: its old bytes are put back."""
    done = _run(tmp_path, "fsize")
    assert done.stdout.splitlines() == ["cannot write shared.json: File too large", '{"old": 1}']


def _failing_write(then=None):
    """A write that fails after its first bytes (a full disk the reservation did not foresee); the
    put-back's own write, the second, goes through."""
    real, calls = in_place_writes._pwrite_all, []

    def write(fd, data):
        calls.append(len(data))
        if len(calls) > 1:
            return real(fd, data)
        os.pwrite(fd, data[:3], 0)
        if then is not None:
            then()
        raise OSError(errno.ENOSPC, "No space left on device")
    return write


def _write(path: Path, content: str) -> None:
    with mock.patch.object(output_paths, "_in_place", return_value=True):
        output_paths.write_files([(str(path), content)])


def test_a_failed_write_in_place_puts_the_old_content_back(tmp_path, monkeypatch):
    path = tmp_path / "shared.json"
    path.write_text('{"old": 1}')
    monkeypatch.setattr(in_place_writes, "_pwrite_all", _failing_write())
    with pytest.raises(SchedcError, match=r"^cannot write .*shared.json: No space left on device$"):
        _write(path, "x" * 100)
    assert path.read_text() == '{"old": 1}'


def test_where_it_cannot_the_error_says_the_file_is_cut_short(tmp_path, monkeypatch):
    path = tmp_path / "shared.json"
    path.write_text('{"old": 1}')
    monkeypatch.setattr(in_place_writes, "_pwrite_all", _failing_write())
    monkeypatch.setattr(in_place_writes, "MAX_KEPT_BYTES", 0)  # too large to keep
    with pytest.raises(SchedcError, match=r"No space left on device; it is left cut short \(its old content"):
        _write(path, "x" * 100)
    assert path.read_text().startswith("xxx")


def test_a_file_renamed_over_the_name_meanwhile_is_not_touched(tmp_path, monkeypatch):
    """The put-back went by name: it wrote the old bytes over the colleague's new result."""
    path, new = tmp_path / "shared.json", tmp_path / "new.json"
    path.write_text('{"old": 1}')
    new.write_text("NEW result")
    monkeypatch.setattr(in_place_writes, "_pwrite_all", _failing_write(then=lambda: os.replace(new, path)))
    with pytest.raises(SchedcError):
        _write(path, "x" * 100)
    assert path.read_text() == "NEW result"


def test_sigterm_while_writing_leaves_no_temporaries(tmp_path):
    done = _run(tmp_path, "term")
    assert done.returncode == -signal.SIGTERM and "survived" not in done.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == ["shared.json"]


def test_a_callers_own_sigterm_handler_stays_in_charge(tmp_path, monkeypatch):
    """A library caller's handler (a graceful-shutdown flag) was replaced, and a write it let go on
    raised SchedcError: where SIGTERM has no default action schedc leaves it alone."""
    seen = []
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: seen.append(signum))
    real = os.replace

    def replace(*args):
        os.kill(os.getpid(), signal.SIGTERM)
        return real(*args)

    try:
        monkeypatch.setattr(os, "replace", replace)
        output_paths.write_files([(str(tmp_path / "a.json"), "{}")])
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert seen == [signal.SIGTERM] and (tmp_path / "a.json").read_text() == "{}"


def test_held_signals_deliver_after_the_block_and_leave_the_handlers_as_they_were():
    from schedc.write_signals import held_signals

    before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    done = []
    with pytest.raises(KeyboardInterrupt), held_signals():
        signal.raise_signal(signal.SIGINT)
        done.append("the clean-up finished")
    assert done == ["the clean-up finished"]
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == before


def test_a_swapped_handler_left_behind_acts_as_the_one_it_replaced():
    """An interrupt at the instant of the swap back can leave the swapped handler installed: once
    its block has ended it must act as the replaced one (it swallowed later SIGTERMs for good)."""
    code = ("import os, signal, time\nfrom schedc.write_signals import _swapped\n"
            "_swapped(signal.SIGTERM, lambda got: None, [False])\n"
            "os.kill(os.getpid(), signal.SIGTERM); time.sleep(2); print('survived')")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == -signal.SIGTERM and "survived" not in done.stdout


def test_writing_never_sets_the_process_umask(tmp_path, monkeypatch):
    """Reading the umask meant setting it for a moment, process-wide: a thread creating a file then
    got 0o644 under a umask of 077 (4 in 30,000), and a second save_plan read 022 as the umask."""
    mask = os.umask(0o027)
    try:
        monkeypatch.setattr(os, "umask", lambda *args: pytest.fail("the umask was set"))
        output_paths.write_files([(str(tmp_path / "new.json"), "{}")])
    finally:
        monkeypatch.undo()
        os.umask(mask)
    assert stat.S_IMODE(os.stat(tmp_path / "new.json").st_mode) == 0o640
