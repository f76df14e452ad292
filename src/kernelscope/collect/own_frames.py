"""Where the program's stack begins below kernelscope's own frames.

A hook (a module hook, the torch function mode, a step detector, the compile callbacks) runs kernelscope code
on top of the program's stack, at a depth that depends on the path that called it. What decides whether a
window may change here (safepoint.py) and which frames run on from the last window (continued.py) reads the
program's frames: found by walking out of kernelscope's package, never by counting frames, so a new call
path cannot make them skip a frame of the program's.
"""

from __future__ import annotations

import os
import sys
from types import FrameType

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def is_own_file(file: str) -> bool:
    """Is this (absolute) file kernelscope's own?"""
    return file.startswith(_PACKAGE)


def is_own(frame: FrameType) -> bool:
    return is_own_file(frame.f_code.co_filename)


def program_frame() -> FrameType | None:
    """The innermost frame of the calling thread that is not kernelscope's (None: kernelscope's all the way)."""
    frame: FrameType | None = sys._getframe(1)
    while frame is not None and is_own(frame):
        frame = frame.f_back
    return frame


__all__ = ["is_own", "is_own_file", "program_frame"]
