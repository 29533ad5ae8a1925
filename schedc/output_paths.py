"""Output paths, checked before the work that fills them: writable, and one file per output.

A search of minutes that ends in "cannot write" throws the work away, so every output is tried
before it starts: a regular file (new or existing) is opened for appending, which finds what the
path alone does not (a name too long, a symlink loop, a read-only or pseudo file system), and a file
the probe created is removed again. Files are told apart by device and inode where they exist, so a
hard link or symlink to an input cannot be overwritten by an output.

Writing is all-or-nothing as far as the file system allows (``write_files``): every content (text,
or bytes for a picture) goes to a temporary beside its target first, and only when all are written,
and any device among the targets (/dev/full) has taken its content, are they moved into place, so
a full disk or a failing second file leaves no partial set and no truncated file.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from collections.abc import Iterable
from pathlib import Path

from schedc.errors import ArgumentError, SchedcError
from schedc.in_place_writes import open_for, write_in_place
from schedc.input_files import checked_path
from schedc.write_signals import held_signals, sigterm_unwinds

FileKey = tuple[int, int] | str
"""(device, inode) of an existing file, else its resolved path."""


def check_writable(path: str, flag: str) -> None:
    """A one-line error for a path the output ``flag`` cannot be written to."""
    if not path:
        raise SchedcError(f"{flag} needs a file name")
    if path == "-":  # not stdout here: the summary already goes there
        raise SchedcError(f"{flag} needs a file name (writing to stdout with - is not supported)")
    try:
        _refuse_odd_name(path)
        _probe(Path(path))
    except OSError as err:
        raise SchedcError(f"cannot write {path}: {err.strerror or err}") from None


_DESCRIPTORS = ("/dev/stdin", "/dev/stdout", "/dev/stderr", "/dev/fd/", "/proc/")


def _refuse_odd_name(path: str) -> None:
    """Names that the paths' resolution would turn into another file:
    - ``plan.json/`` or ``plan.csv/.``: Path() drops the slash and realpath() the dot, and the write
      would then replace the file ``plan.json``, which may be an input;
    - ``nosuchdir/../plan.json``: realpath() drops ``nosuchdir/..`` where the kernel would fail;
    - ``/dev/stdout``: it resolves to whatever stdout is, a pipe (no such file) or a file that the
      write would replace, and the report with it."""
    if path.endswith(os.sep) or os.path.basename(path) in (".", ".."):
        raise IsADirectoryError(errno.EISDIR, "a file name cannot end in /, /. or /.. (it names a directory)")
    if os.path.abspath(path).startswith(_DESCRIPTORS) or _is_standard_stream(path):
        raise OSError(errno.EINVAL, "a standard stream, file descriptor or /proc file is not supported: "
                                    "name a file")
    try:
        os.stat(path)  # a symlink to ``plan.json/`` hides the ending: stat() meets it
    except NotADirectoryError:
        raise
    except OSError:
        pass
    folder = os.path.dirname(path) or "."
    try:
        os.stat(folder)  # as the kernel walks it, nosuchdir/.. included
    except FileNotFoundError:
        raise FileNotFoundError(errno.ENOENT, f"no directory {folder}") from None


def _is_standard_stream(path: str) -> bool:
    """Whether ``path`` is this process's stdin, stdout or stderr (``//dev/stdout``, a symlink to it,
    or the file stdout is redirected to), other than /dev/null: a write there would replace the file
    the report goes to."""
    try:
        target = os.stat(path)
        streams = {(info.st_dev, info.st_ino) for info in map(_fstat, (0, 1, 2)) if info is not None}
        null = os.stat(os.devnull)
    except OSError:
        return False
    key = (target.st_dev, target.st_ino)
    return key in streams and key != (null.st_dev, null.st_ino)


def _fstat(fd: int) -> os.stat_result | None:
    try:
        return os.fstat(fd)
    except OSError:  # a closed stream
        return None


def _probe(target: Path) -> None:
    """Raises the OSError a write to ``target`` would meet (as far as opening it tells)."""
    if target.is_dir():
        raise IsADirectoryError(21, "Is a directory")
    real = Path(os.path.realpath(target))  # through symlinks, so the probe removes what it made
    if not real.parent.is_dir():
        raise FileNotFoundError(2, f"no directory {real.parent if target.is_symlink() else target.parent}")
    if real.exists() and not real.is_file():  # a device or FIFO: opening could block or act
        if not os.access(real, os.W_OK):
            raise PermissionError(13, "Permission denied")
        return
    existed = real.exists()
    os.close(os.open(real, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o666))
    if not existed:
        real.unlink()


def file_key(path: str | None) -> FileKey | None:
    """Identity of a regular (or future) file; None for no path and for devices such as /dev/null,
    which may take several outputs."""
    if path is None:
        return None
    try:
        info = os.stat(path)
    except OSError:  # not there (yet), or not reachable: its resolved name stands for it
        return os.path.realpath(path)
    if not stat.S_ISREG(info.st_mode):
        return None
    return info.st_dev, info.st_ino


# ---- writing --------------------------------------------------------------------------------


class _Failed(Exception):
    """The OSError met while writing the output named ``path`` (as given, not resolved)."""

    def __init__(self, path: str, error: OSError) -> None:
        super().__init__(path, error)
        self.path, self.error = path, error


def write_files(items: list[tuple[str, str | bytes]]) -> None:
    """Writes each (path, content) all-or-nothing: a failure is a one-line SchedcError ``cannot write
    PATH: reason`` and leaves every target as it was, except where a rename fails after another
    succeeded (rare: same directory; what was renamed stays, whole), or where a write in place is
    involved (a device, or a file of another owner): one that fails gets its old content back where
    it can (``in_place_writes``; the error says when not), and one that succeeded keeps what it got
    if a later write fails."""
    try:
        _write_all(items)
    except _Failed as failed:
        raise SchedcError(f"cannot write {failed.path}: {failed.error.strerror or failed.error}") from None


def is_special_file(path: str) -> bool:
    """An existing output that is no regular file (/dev/null, a FIFO): nothing reads it back by name."""
    return os.path.exists(path) and not os.path.isfile(path)


def check_suffix(path: str | os.PathLike[str], writer: str, what: str, *, csv: bool,
                 toml_ok: bool = True) -> None:
    """A library writer's file named as the other format: ``schedc show`` and ``validate`` read a
    ``.csv`` name as torch's CSV and any other as JSON, so ``save_plan(plan, "x.csv")`` wrote a file
    they could not read back ("unknown action token '{'"); refused, as the CLI's -o and --csv do
    (``toml_ok=False``: a plan named ``.toml`` too, as ``-o`` refuses it)."""
    name = checked_path(path, "output", ArgumentError)  # None, bytes, a NUL: named as write_file does
    if os.path.basename(name) in ("", ".", ".."):
        return  # no file name at all: write_file says so
    if csv and not name.lower().endswith(".csv") and not is_special_file(name):  # /dev/stdout: any name
        raise ArgumentError(f"{writer}: {path}: show and validate read any name but .csv as a plan "
                            f"JSON, and {what} is a torch CSV: name it .csv")
    if not csv and name.lower().endswith(".csv"):
        raise ArgumentError(f"{writer}: {path}: show and validate read a .csv name as a torch CSV, and "
                            f"{what} is JSON: name it .json")
    if not toml_ok and name.lower().endswith(".toml"):
        raise ArgumentError(f"{writer}: {path}: {what} is JSON, which a .toml name passes off as TOML: "
                            "name it .json")


def write_file(path: str | os.PathLike[str], content: str | bytes) -> None:
    """One file, as ``write_files`` writes it (never truncated by a failure); raises the OSError met,
    so that each library writer keeps its own error type and message."""
    try:
        _write_all([(checked_path(path, "output", ArgumentError), content)])
    except _Failed as failed:
        raise failed.error from None


def _write_all(items: list[tuple[str, str | bytes]]) -> None:
    """Temporaries first, then what can only be written in place, then renames: a write in place
    (a device such as /dev/full, a file of another owner) may fail where nothing else can be undone,
    so nothing is renamed before it is done; a rename, in the directory its temporary was written
    to, rarely fails. Symlinks are written through, so they stay symlinks."""
    staged: list[tuple[str, str, str]] = []  # (temporary, resolved target, path as given)
    in_place: list[tuple[str, str | bytes]] = []
    path = ""
    with sigterm_unwinds():  # outside the clean-up, which it must run through
        try:
            for path, content in items:
                _refuse_odd_name(path)
                real = os.path.realpath(path)
                if _in_place(real):
                    in_place.append((path, content))
                else:
                    staged.append((_write_temp(real, content), real, path))
            for path, content in in_place:
                write_in_place(path, content)
            while staged:
                temp, real, path = staged[0]
                os.replace(temp, real)
                staged.pop(0)
        except OSError as err:
            raise _Failed(path, err) from None
        finally:
            with held_signals():  # a second signal must not leave a temporary behind
                _remove(temp for temp, _, _ in staged)


def _in_place(real: str) -> bool:
    """Whether ``real`` must be written in place rather than replaced: a device or FIFO (/dev/null),
    a file of another owner (a new file would change its owner), or a file in a directory this
    process cannot add a temporary to. A file it may not write is refused, as open() would."""
    try:
        info = os.stat(real)
    except FileNotFoundError:
        return False
    if not stat.S_ISREG(info.st_mode):
        return True
    if not os.access(real, os.W_OK):
        raise PermissionError(errno.EACCES, "Permission denied")
    return info.st_uid != os.geteuid() or not os.access(os.path.dirname(real), os.W_OK | os.X_OK)


def _write_temp(real: str, content: str | bytes) -> str:
    """Writes ``content`` to a new temporary beside ``real`` (same file system, so the rename is atomic)
    with the permission bits ``real`` will need; returns its name. A failure removes it."""
    folder, name = os.path.split(real)
    fd, temp = _new_temp(folder, name)
    try:
        with open_for(fd, content) as f:
            f.write(content)
        with contextlib.suppress(FileNotFoundError):  # a new target keeps the umask's bits
            os.chmod(temp, stat.S_IMODE(os.stat(real).st_mode))
    except BaseException:
        _remove([temp])
        raise
    return temp


def _new_temp(folder: str, name: str) -> tuple[int, str]:
    """A new file beside the target, created with 0o666 so that the kernel applies the umask, as
    open() would to the target itself. Reading the umask means setting it, process-wide: a thread
    creating a file meanwhile got 0o644 under a umask of 077."""
    for _ in range(100):
        temp = os.path.join(folder, f".{name[:60]}.{secrets.token_hex(4)}.tmp")  # [:60]: within NAME_MAX
        try:
            return os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666), temp
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no unused temporary name", folder)


def _remove(temps: Iterable[str]) -> None:
    for temp in temps:
        with contextlib.suppress(OSError):
            os.unlink(temp)
