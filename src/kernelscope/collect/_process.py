"""Process-level helpers for live collection: the git commit, deferred Ctrl-C, a silenced fd."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Iterator


def git_commit() -> str | None:
    import subprocess

    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=2, check=False
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return out or None


@contextlib.contextmanager
def sigint_deferred() -> Iterator[None]:
    """Hold a Ctrl-C until the block is done, then raise it (main thread only; elsewhere a no-op)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    pending: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: pending.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if pending:
        raise KeyboardInterrupt


class quiet_fd:
    """Silence a file descriptor (torch 2.13 prints USDT lines on profiler start/stop)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.saved: int | None = None

    def __enter__(self) -> None:
        if os.environ.get("KERNELSCOPE_DEBUG"):
            return
        try:
            sys.stderr.flush()
            self.saved = os.dup(self.fd)
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self.fd)
            os.close(devnull)
        except OSError:
            self.saved = None

    def __exit__(self, *exc: object) -> None:
        if self.saved is not None:
            os.dup2(self.saved, self.fd)
            os.close(self.saved)
