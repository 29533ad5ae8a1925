"""Writes no rename can undo: a device or FIFO (/dev/null), and a regular file schedc must rewrite
in place (another owner's, whose owner a replacement would change, or one in a folder it cannot add
a temporary to).

A regular file is rewritten through one descriptor, opened without truncating it: its old bytes
are read first (up to ``MAX_KEPT_BYTES``), and if the write fails (a full disk, a quota, a size
limit, an error NFS reports only at fsync) they are put back, with SIGINT and SIGTERM held so that a
second signal cannot cut the put-back short. Through the descriptor, a file another program renamed
over the name meanwhile is never touched. Where the old content cannot be put back, the error says
the file is left cut short.
"""

from __future__ import annotations

import contextlib
import errno
import io
import os
import stat

from schedc.errors import to_stderr
from schedc.write_signals import held_signals, stream_write

MAX_KEPT_BYTES = 64 << 20
"""The largest old content kept in memory to be put back."""


def open_for(path: str | int, content: str | bytes) -> io.BufferedWriter | io.TextIOWrapper:
    """A file opened for writing ``content``: UTF-8 text as given (no newline translation), or bytes."""
    if isinstance(content, bytes):
        return open(path, "wb")
    return open(path, "w", encoding="utf-8", newline="")


def write_in_place(path: str, content: str | bytes) -> None:
    """Writes ``content`` over ``path``, which exists or is a device (see the module doc)."""
    opened = _open_regular(path)
    if opened is None:  # a device or FIFO: written as a stream (a FIFO waits for its reader)
        with stream_write(), open_for(path, content) as f:
            f.write(content)
        return
    fd, readable = opened
    try:
        _rewrite(fd, readable, content.encode("utf-8") if isinstance(content, str) else content, path)
    finally:
        os.close(fd)


def _open_regular(path: str) -> tuple[int, bool] | None:
    """(descriptor, readable) of the regular file at ``path``, read-write where allowed, not
    truncated; None for anything else (O_NONBLOCK: a FIFO swapped in after the stat is not waited
    for)."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):  # opened read-write, a FIFO would wake its reader
            return None
    except FileNotFoundError:
        return None  # gone meanwhile: open_for creates it
    flags = os.O_NONBLOCK | os.O_CLOEXEC
    readable = True
    try:
        fd = os.open(path, os.O_RDWR | flags)
    except PermissionError:
        fd, readable = os.open(path, os.O_WRONLY | flags), False
    except OSError as err:
        if err.errno in (errno.ENXIO, errno.EISDIR):  # a FIFO without a reader, not a file
            return None
        raise
    if stat.S_ISREG(os.fstat(fd).st_mode):
        os.set_blocking(fd, True)
        return fd, readable
    os.close(fd)
    return None


def _rewrite(fd: int, readable: bool, data: bytes, path: str) -> None:
    old = _old_bytes(fd) if readable else None  # before any byte changes: an interrupt here loses nothing
    try:
        _pwrite_all(fd, data)
        os.ftruncate(fd, len(data))
        os.fsync(fd)  # NFS reports a full disk or quota here, not at the write
    except BaseException as err:  # Ctrl-C and SIGTERM's unwinding too
        with held_signals():
            if old is None or not _put_back(fd, old):
                _say_cut_short(err, path)
        raise


def _old_bytes(fd: int) -> bytes | None:
    size = os.fstat(fd).st_size
    if size > MAX_KEPT_BYTES:
        return None
    with contextlib.suppress(OSError, MemoryError):
        return os.pread(fd, size, 0)
    return None


def _pwrite_all(fd: int, data: bytes) -> None:
    done = 0
    while done < len(data):
        done += os.pwrite(fd, data[done:done + (1 << 24)], done)


def _put_back(fd: int, old: bytes) -> bool:
    try:
        _pwrite_all(fd, old)
        os.ftruncate(fd, len(old))
    except OSError:
        return False
    return True


def _say_cut_short(err: BaseException, path: str) -> None:
    """In the error where it is an OSError (it becomes ``cannot write PATH: ...``), else on stderr."""
    if isinstance(err, OSError):
        err.strerror = f"{err.strerror or err}; it is left cut short (its old content was not put back)"
    else:
        to_stderr(f"schedc: {path} is left cut short (its old content was not put back)")
