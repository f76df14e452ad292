"""SIGTERM and SIGHUP save the profile, then end the process as the signal would have.

``timeout``, CI runners, Kubernetes and SLURM preemption stop a program with SIGTERM; a closed terminal
sends SIGHUP. Under ``kernelscope run`` these raise ``Terminated`` in the program (its ``finally`` blocks
run, as for Ctrl-C), the runner returns, the profile is finalized and saved, and then ``end_as`` restores
the default action and sends the signal again, so the exit status is the one the signal gives (143 for
SIGTERM) and whoever sent it sees what they expect.

Only signals whose handler is the default are taken: one the program was started with ignored (``nohup``
ignores SIGHUP) stays ignored, and a handler the program installs itself replaces ours, so its own
handling runs. While the profile is being saved, the signals are held and acted on after the save.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Iterator
from types import FrameType

SIGNALS = tuple(s for s in (getattr(signal, "SIGTERM", None), getattr(signal, "SIGHUP", None)) if s is not None)


class Terminated(BaseException):
    """Raised in the profiled program by SIGTERM/SIGHUP (a BaseException, like KeyboardInterrupt)."""

    def __init__(self, signum: int) -> None:
        super().__init__(f"terminated by {signal.Signals(signum).name}")
        self.signum = signum

    @property
    def name(self) -> str:
        return signal.Signals(self.signum).name


def _raise(signum: int, frame: FrameType | None) -> None:
    raise Terminated(signum)


@contextlib.contextmanager
def terminating() -> Iterator[None]:
    """SIGTERM/SIGHUP raise ``Terminated`` inside this block (main thread only; default handlers only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    taken = {s: signal.getsignal(s) for s in SIGNALS if signal.getsignal(s) is signal.SIG_DFL}
    for s in taken:
        signal.signal(s, _raise)
    try:
        yield
    finally:
        for s, previous in taken.items():
            if signal.getsignal(s) is _raise:  # the program may have put its own handler in place
                signal.signal(s, previous)


@contextlib.contextmanager
def held() -> Iterator[list[int]]:
    """While saving: SIGTERM/SIGHUP are recorded, not acted on; the list holds those that came."""
    pending: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield pending
        return

    def hold(signum: int, frame: FrameType | None) -> None:
        pending.append(signum)

    previous = {s: signal.getsignal(s) for s in SIGNALS}
    for s, handler in previous.items():
        if handler is not signal.SIG_IGN:
            signal.signal(s, hold)
    try:
        yield pending
    finally:
        for s, handler in previous.items():
            if signal.getsignal(s) is hold:
                signal.signal(s, handler if handler is not None else signal.SIG_DFL)


def end_as(signum: int) -> None:
    """End the process as ``signum``'s default action does (status 128 + signum to a shell)."""
    signal.signal(signum, signal.SIG_DFL)
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os.kill(os.getpid(), signum)
    signal.pthread_kill(threading.get_ident(), signum)  # (if it was blocked in this thread)
