"""Outputs are written all-or-nothing: temporaries beside each target, renamed into place only when
every one is written; modes kept, symlinks written through, devices written in place."""

from __future__ import annotations

import os
import re
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from schedc import load_plan, output_paths
from schedc.baselines import baseline_plan
from schedc.errors import PlanFormatError, SchedcError
from schedc.output_paths import write_file
from schedc.plan_json import save_plan
from schedc.problem import Problem
from schedc.torch_csv import csv_text, read_csv_orders, write_csv
from schedc.trace import write_trace
from tests.cli_helpers import SEED, run

ENOSPC = "No space left on device"
needs_dev_full = pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full (Linux)")


def full_disk_for(monkeypatch, name: str) -> list[str]:
    """Temporaries as ever, except that the one for the file ``name`` lies on a full disk (its
    descriptor is /dev/full's), so writing it fails with ENOSPC as a real full disk would. Returns the
    prefixes of the temporaries made, in order."""
    made, new_temp = [], output_paths._new_temp

    def fake(folder, target):
        fd, temp = new_temp(folder, target)
        made.append(f".{target}.")
        if target == name:
            full = os.open("/dev/full", os.O_WRONLY)
            os.dup2(full, fd)
            os.close(full)
        return fd, temp

    monkeypatch.setattr(output_paths, "_new_temp", fake)
    return made


def outputs(tmp_path: Path) -> tuple[str, str, str]:
    return str(tmp_path / "p.json"), str(tmp_path / "p.csv"), str(tmp_path / "t.json")


def plan():
    return baseline_plan("1f1b", Problem(p=2, m=4, split=False, tb=1, tw=0))


def csv_bytes() -> bytes:
    """The CSV as written, byte for byte: torch's CRLF line ends are kept."""
    return csv_text(plan()).encode()


@needs_dev_full
def test_a_failed_second_output_writes_none_of_the_set(capsys, tmp_path, monkeypatch):
    out_json, out_csv, out_trace = outputs(tmp_path)
    Path(out_json).write_text("old\n")
    made = full_disk_for(monkeypatch, "p.csv")
    code, out, err = run(capsys, "baseline", "1f1b", *SEED, "-o", out_json, "--csv", out_csv,
                         "--trace", out_trace)
    assert code == 1 and err == f"schedc: error: cannot write {out_csv}: {ENOSPC}\n"
    assert "Traceback" not in out + err and "wrote" not in out
    assert made == [".p.json.", ".p.csv."]  # the first temporary was written when the second failed
    assert os.listdir(tmp_path) == ["p.json"] and Path(out_json).read_text() == "old\n"


@needs_dev_full
@pytest.mark.parametrize("device", ["-o", "--csv"])
def test_a_device_that_fails_leaves_the_other_outputs_as_they_were(capsys, tmp_path, device):
    """A device is written in place, which cannot be undone: it goes before the renames (it went
    after them, and /dev/full's failure left the CSV or the plan replaced)."""
    out_json, out_csv, _ = outputs(tmp_path)
    link = tmp_path / "full.csv"
    link.symlink_to("/dev/full")
    Path(out_json).write_text("old\n")
    Path(out_csv).write_text("old\n")
    flags = ["-o", "/dev/full", "--csv", out_csv] if device == "-o" else ["-o", out_json, "--csv", str(link)]
    code, out, err = run(capsys, "baseline", "1f1b", *SEED, *flags)
    failed = "/dev/full" if device == "-o" else str(link)
    assert code == 1 and err == f"schedc: error: cannot write {failed}: {ENOSPC}\n" and "wrote" not in out
    assert Path(out_json).read_text() == "old\n" and Path(out_csv).read_text() == "old\n"
    assert sorted(os.listdir(tmp_path)) == ["full.csv", "p.csv", "p.json"]


def test_a_failed_rename_leaves_no_temporaries_and_no_output(capsys, tmp_path, monkeypatch):
    """Nothing is renamed before every temporary is written; a failed rename removes them all."""
    out_json, out_csv, out_trace = outputs(tmp_path)
    seen, replace = [], os.replace

    def fake(src, dst):
        seen.append(sorted(os.listdir(tmp_path)))
        if os.path.basename(dst) == "p.json":
            raise OSError(28, ENOSPC)
        replace(src, dst)

    monkeypatch.setattr(os, "replace", fake)
    code, _, err = run(capsys, "baseline", "1f1b", *SEED, "-o", out_json, "--csv", out_csv,
                         "--trace", out_trace)
    assert code == 1 and err == f"schedc: error: cannot write {out_json}: {ENOSPC}\n"
    assert len(seen) == 1 and [re.sub(r"\.[^.]+\.tmp$", "", name) for name in seen[0]] == [
        ".p.csv", ".p.json", ".t.json"]
    assert os.listdir(tmp_path) == []


@needs_dev_full
@pytest.mark.parametrize("writer, error, message", [
    (save_plan, PlanFormatError, "cannot write plan {path}: "),
    (write_csv, SchedcError, "cannot write {path}: "),
    (lambda plan, path: write_trace(plan, path, 1), SchedcError, "cannot write {path}: "),
], ids=["save_plan", "write_csv", "write_trace"])
def test_a_failed_library_write_keeps_the_old_file_whole(tmp_path, monkeypatch, writer, error, message):
    name = "out.csv" if writer is write_csv else "out.txt"  # write_csv writes .csv names only
    path = tmp_path / name
    path.write_text("old\n")
    full_disk_for(monkeypatch, name)
    with pytest.raises(SchedcError) as caught:
        writer(plan(), str(path))
    assert caught.type is error and str(caught.value) == message.format(path=path) + ENOSPC
    assert os.listdir(tmp_path) == [name] and path.read_text() == "old\n"


def test_an_overwritten_output_keeps_its_mode_and_a_new_one_gets_opens_default(capsys, tmp_path):
    out_json, out_csv, _ = outputs(tmp_path)
    Path(out_csv).write_text("old\n")
    os.chmod(out_csv, 0o604)
    old_umask = os.umask(0o002)
    try:
        code, _, err = run(capsys, "baseline", "1f1b", *SEED, "-o", out_json, "--csv", out_csv)
    finally:
        os.umask(old_umask)
    assert code == 0 and err == ""
    assert stat.S_IMODE(os.stat(out_csv).st_mode) == 0o604 and Path(out_csv).read_bytes() == csv_bytes()
    assert stat.S_IMODE(os.stat(out_json).st_mode) == 0o664  # 0o666 & ~umask, not mkstemp's 0o600


def test_a_symlinked_output_stays_a_symlink_and_its_target_gets_the_text(capsys, tmp_path):
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "p.json").write_text("old\n")
    os.symlink("real/p.json", tmp_path / "link.json")
    os.symlink("real/new.csv", tmp_path / "dangling.csv")  # a target not there yet is created
    code, _, err = run(capsys, "baseline", "1f1b", *SEED, "-o", str(tmp_path / "link.json"),
                       "--csv", str(tmp_path / "dangling.csv"))
    assert code == 0 and err == ""
    assert os.readlink(tmp_path / "link.json") == "real/p.json"
    assert os.readlink(tmp_path / "dangling.csv") == "real/new.csv"
    assert load_plan(str(tmp_path / "real" / "p.json")).orders == plan().orders
    assert read_csv_orders(str(tmp_path / "real" / "new.csv"), plan().problem) == plan().orders
    assert sorted(os.listdir(tmp_path)) == ["dangling.csv", "link.json", "real"]
    assert sorted(os.listdir(tmp_path / "real")) == ["new.csv", "p.json"]


def test_dev_null_takes_outputs_beside_a_regular_file(capsys, tmp_path):
    out_json = str(tmp_path / "p.json")
    code, out, err = run(capsys, "baseline", "1f1b", *SEED, "-o", out_json, "--csv", os.devnull,
                         "--trace", os.devnull)
    assert code == 0 and err == ""
    assert f"wrote {out_json}" in out and out.count(f"wrote {os.devnull}") == 2
    assert stat.S_ISCHR(os.stat(os.devnull).st_mode) and load_plan(out_json).orders == plan().orders
    assert os.listdir(tmp_path) == ["p.json"]


def test_a_file_of_another_owner_is_written_in_place_ones_own_is_replaced(tmp_path, monkeypatch):
    """Replacing another user's file would make it ours; so it is written in place, keeping its inode."""
    path = tmp_path / "p.csv"
    path.write_text("old\n")
    before = os.stat(path).st_ino
    write_csv(plan(), str(path))
    assert os.stat(path).st_ino != before and path.read_bytes() == csv_bytes()  # replaced whole
    path.write_text("old\n")
    before, uid = os.stat(path).st_ino, os.geteuid()
    monkeypatch.setattr(os, "geteuid", lambda: uid + 1)
    write_csv(plan(), str(path))
    assert os.stat(path).st_ino == before and path.read_bytes() == csv_bytes()


def test_bytes_are_written_as_given_replaced_or_in_place(tmp_path, monkeypatch):
    """A picture's bytes (CR, LF and non-UTF-8 bytes included) reach the file unchanged either way."""
    path, data = tmp_path / "p.png", b"\x89PNG\r\n\x1a\n\xff\x00"
    write_file(path, data)
    assert path.read_bytes() == data
    uid = os.geteuid()
    monkeypatch.setattr(os, "geteuid", lambda: uid + 1)
    write_file(path, data[::-1])
    assert path.read_bytes() == data[::-1]


def test_a_name_near_the_limit_gets_a_temporary_that_fits(tmp_path):
    path = tmp_path / ("a" * 250 + ".csv")
    write_csv(plan(), str(path))
    assert os.listdir(tmp_path) == [path.name] and path.read_bytes() == csv_bytes()


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write any file")
def test_a_read_only_file_is_refused_not_replaced(tmp_path):
    path = tmp_path / "p.csv"
    path.write_text("old\n")
    os.chmod(path, 0o444)
    with pytest.raises(SchedcError, match=re.escape(f"cannot write {path}: Permission denied")):
        write_csv(plan(), str(path))
    assert os.listdir(tmp_path) == ["p.csv"] and path.read_text() == "old\n"


@pytest.mark.parametrize("suffix", ["/", "/.", "/.."])
def test_a_name_ending_in_a_slash_or_dot_is_refused_not_written_to_the_file_before_it(capsys, tmp_path,
                                                                                       suffix):
    """Path() drops a trailing slash and realpath() a trailing dot: ``--trace p.json/`` replaced the
    plan p.json that ``show`` was reading, and ``save_plan(plan, "p.json/")`` wrote p.json."""
    source = tmp_path / "p.json"
    save_plan(plan(), str(source))
    before = source.read_bytes()
    code, _, err = run(capsys, "show", str(source), "--trace", f"{source}{suffix}")
    assert code == 1 and f"cannot write {source}{suffix}: a file name cannot end in /" in err
    with pytest.raises(PlanFormatError, match="a file name cannot end in /"):
        save_plan(plan(), f"{source}{suffix}")
    with pytest.raises(SchedcError, match="a file name cannot end in /"):
        write_csv(plan(), f"{source}{suffix}")
    assert source.read_bytes() == before and os.listdir(tmp_path) == ["p.json"]


def test_a_name_through_a_missing_folder_is_refused_not_written_beside_it(capsys, tmp_path):
    """realpath() turns ``nosuchdir/../p.json`` into ``p.json``, where the kernel fails: ``show p.json
    --csv nosuchdir/../p.json`` replaced the plan it was reading with the CSV."""
    source = tmp_path / "p.json"
    save_plan(plan(), str(source))
    before = source.read_bytes()
    odd = f"{tmp_path}/nosuchdir/../p.json"
    code, _, err = run(capsys, "show", str(source), "--csv", odd)
    assert code == 1 and f"cannot write {odd}: no directory {tmp_path}/nosuchdir/.." in err
    with pytest.raises(PlanFormatError, match="no directory"):
        save_plan(plan(), odd)
    with pytest.raises(SchedcError, match="no directory"):
        write_csv(plan(), f"{tmp_path}/nosuchdir/../q.csv")
    assert source.read_bytes() == before and os.listdir(tmp_path) == ["p.json"]


@pytest.mark.parametrize("name", ["/dev/stdout", "/dev/stderr", "/dev/fd/1", "/proc/self/fd/1"])
def test_a_standard_stream_as_an_output_is_refused(capsys, name):
    """/dev/stdout resolves to whatever stdout is: a pipe (an unclear error) or a file that the
    write would replace, report and all."""
    code, out, err = run(capsys, "baseline", "1f1b", "--p", "2", "--m", "4", "-o", name)
    assert code == 1 and out == "" and err.strip() == (
        f"schedc: error: cannot write {name}: a standard stream, file descriptor or /proc file is not "
        "supported: name a file")


@pytest.mark.parametrize("name", ["//dev/stdout", "link.json", "report.txt"])
def test_the_file_stdout_goes_to_is_refused_under_any_name(tmp_path, name):
    """By identity, not by name: a double slash, a symlink to /dev/stdout, or the redirected file
    itself would be replaced by the plan, report and all. /dev/null may take both."""
    (tmp_path / "link.json").symlink_to("/dev/stdout")
    main = f"{sys.executable} -c 'import sys; from schedc.cli import main; sys.exit(main(sys.argv[1:]))'"
    command = f"{main} baseline 1f1b --p 2 --m 4 -o {name} > report.txt"
    done = subprocess.run(["sh", "-c", command], cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 1 and "file descriptor or /proc file is not supported" in done.stderr
    done = subprocess.run(["sh", "-c", f"{main} baseline 1f1b --p 2 --m 4 -o /dev/null > /dev/null"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("suffix", ["/", "/."])
def test_a_symlink_to_a_name_ending_in_a_slash_is_refused_too(capsys, tmp_path, suffix):
    source, link = tmp_path / "p.json", tmp_path / "link"
    save_plan(plan(), str(source))
    before = source.read_bytes()
    os.symlink(f"p.json{suffix}", link)
    code, _, err = run(capsys, "show", str(source), "--trace", str(link))
    assert code == 1 and f"cannot write {link}: Not a directory" in err
    with pytest.raises(PlanFormatError, match="Not a directory"):
        save_plan(plan(), str(link))
    assert source.read_bytes() == before


def test_two_spellings_of_one_new_output_are_the_same_file(capsys, tmp_path, monkeypatch):
    """A new file has no device and inode yet, so its key is its resolved name: keyed by the name as
    typed, ``-o out.json --trace ./out.json`` passed and the trace replaced the plan just written."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sub").mkdir()
    for second in ("./out.json", str(tmp_path / "out.json"), "sub/../out.json"):
        code, _, err = run(capsys, "baseline", "gpipe", "--p", "2", "--m", "2", "-o", "out.json",
                           "--trace", second)
        assert code == 1 and "-o and --trace name the same file" in err, (second, err)
        assert not (tmp_path / "out.json").exists()

