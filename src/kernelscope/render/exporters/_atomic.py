"""Atomic text output: a failure never leaves a half-written file at the target."""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Iterator
from typing import BinaryIO, TextIO


def _new_file_mode(target: str) -> int:
    """The mode the target would get from a plain ``open(target, "w")`` (or keeps, if it exists)."""
    try:
        return stat.S_IMODE(os.stat(target).st_mode)
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


@contextlib.contextmanager
def atomic_text_file(path: str | os.PathLike[str]) -> Iterator[TextIO]:
    """Yield a UTF-8 text stream; on success it replaces ``path``, on any failure it is removed."""
    target = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(target))
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(target)}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, _new_file_mode(target))
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


@contextlib.contextmanager
def atomic_binary_file(path: str | os.PathLike[str]) -> Iterator[BinaryIO]:
    """``atomic_text_file`` for bytes."""
    target = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(target))
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(target)}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "wb") as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, _new_file_mode(target))
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
