"""Output paths, checked before the work that fills them: writable, and one file per output.

A search of minutes that ends in "cannot write" throws the work away, so every output is tried
before it starts: a regular file (new or existing) is opened for appending, which finds what the
path alone does not (a name too long, a symlink loop, a read-only or pseudo file system), and a file
the probe created is removed again. Files are told apart by device and inode where they exist, so a
hard link or symlink to an input cannot be overwritten by an output.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from schedc.errors import SchedcError

FileKey = tuple[int, int] | str
"""(device, inode) of an existing file, else its resolved path."""


def check_writable(path: str, flag: str) -> None:
    """A one-line error for a path the output ``flag`` cannot be written to."""
    if not path:
        raise SchedcError(f"{flag} needs a file name")
    if path == "-":  # not stdout here: the summary already goes there
        raise SchedcError(f"{flag} needs a file name (writing to stdout with - is not supported)")
    try:
        _probe(Path(path))
    except OSError as err:
        raise SchedcError(f"cannot write {path}: {err.strerror or err}") from None


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
