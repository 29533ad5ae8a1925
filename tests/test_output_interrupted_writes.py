"""Writes that cannot be all-or-nothing by renaming: a file rewritten in place (another owner's, or
in a folder schedc cannot add a file to) whose write fails gets its old content back, and SIGTERM
while outputs are written leaves no temporaries (hidden files of megabytes, job after job)."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

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
    output_paths.MAX_KEPT_BYTES = int(sys.argv[3])
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


def test_a_failed_write_in_place_puts_the_old_content_back(tmp_path):
    done = _run(tmp_path, "fsize", str(1 << 30))
    assert done.stdout.splitlines() == ["cannot write shared.json: File too large", '{"old": 1}']


def test_where_it_cannot_the_error_says_the_file_is_cut_short(tmp_path):
    done = _run(tmp_path, "fsize", "0")  # the old content too large to keep
    assert done.stdout.splitlines() == [
        "cannot write shared.json: File too large; it is left cut short (its old content was not put back)",
        "x" * 20]


def test_sigterm_while_writing_leaves_no_temporaries(tmp_path):
    done = _run(tmp_path, "term")
    assert done.returncode == -signal.SIGTERM and "survived" not in done.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == ["shared.json"]
