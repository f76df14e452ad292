"""Which source files a reader may open: only regular text files under the program's own roots.

Traces and profiles come from other people, and a frame's file name is data they chose: a trace whose
frames say ``/proc/self/environ`` or ``../../etc/passwd`` must not make the report or the MCP server
copy those files out. A reader asks ``SourceRoots.read(file)`` and gets the file's lines only when

- the name (relative names are taken under each root in turn) resolves, symlinks followed, to a path
  under one of the roots — a symlink inside a root that points out of it is refused;
- nothing on that path is ``/proc``, ``/sys`` or ``/dev``, nor a folder of credentials (``.ssh``, ``.aws``, …);
- it is a regular file (no FIFO, device or folder: opened without blocking, checked after opening),
  at most ``MAX_FILE_BYTES``, and text (no NUL byte).

Everything else reads as ``None``: the caller shows the file name only. Roots are the run's working folder
and its script's folder for live runs, and the folders the user names (``--source-root``, default the
current folder) for everything read later.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass

MAX_FILE_BYTES = 2_000_000

# Never read below these, whatever the roots say (a root of "/" included).
SYSTEM_TREES = ("/proc", "/sys", "/dev")
# Folders (any path component) that hold credentials or keys, not source.
CREDENTIAL_FOLDERS = frozenset(
    {
        ".ssh",
        ".gnupg",
        ".aws",
        ".azure",
        ".gcloud",
        ".kube",
        ".docker",
        ".git",
        ".password-store",
        ".netrc",
        ".pgpass",
        ".git-credentials",
        ".pypirc",
        ".npmrc",
        ".config",
    }
)


@dataclass(frozen=True)
class SourceRoots:
    """Folders (real paths) under which source files may be read."""

    roots: tuple[str, ...]

    @classmethod
    def of(cls, paths: Iterable[str | os.PathLike[str]]) -> SourceRoots:
        out: list[str] = []
        for p in paths:
            real = os.path.realpath(os.fspath(p))
            if os.path.isdir(real) and real not in out:
                out.append(real)
        return cls(tuple(out))

    @classmethod
    def here(cls) -> SourceRoots:
        """The default for imported traces and profiles read later: the current folder only."""
        return cls.of([os.getcwd()])

    def resolve(self, file: str) -> str | None:
        """The real path ``file`` names under one of the roots, or ``None`` when it may not be read."""
        if not file or "\x00" in file:
            return None
        candidates = [file] if os.path.isabs(file) else [os.path.join(root, file) for root in self.roots]
        for candidate in candidates:
            real = os.path.realpath(candidate)
            if self._allowed(real) and os.path.isfile(real):
                return real
        return None

    def read(self, file: str) -> list[str] | None:
        """The lines of ``file`` when it may be read (see the module's rules), else ``None``."""
        real = self.resolve(file)
        return None if real is None else read_text_lines(real)

    def _allowed(self, real: str) -> bool:
        if any(real == t or real.startswith(t + os.sep) for t in SYSTEM_TREES):
            return False
        for root in self.roots:
            if real == root:
                return False  # a folder, never a file
            prefix = root if root.endswith(os.sep) else root + os.sep
            if real.startswith(prefix):
                parts = real[len(prefix) :].split(os.sep)
                return (
                    not any(part in CREDENTIAL_FOLDERS for part in parts[:-1]) and parts[-1] not in CREDENTIAL_FOLDERS
                )
        return False


def read_text_lines(real: str, max_bytes: int = MAX_FILE_BYTES) -> list[str] | None:
    """A regular text file's lines; ``None`` for anything else (opened non-blocking, so a FIFO never hangs)."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(real, flags)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > max_bytes:
            return None
        chunks: list[bytes] = []
        size = 0
        while size <= max_bytes:
            chunk = os.read(fd, max_bytes + 1 - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        data = b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)
    if len(data) > max_bytes or b"\x00" in data:
        return None
    return data.decode("utf-8", errors="replace").splitlines()
