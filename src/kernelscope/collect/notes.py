"""What a live session tells the user it may not expect, and starting compile capture without risk."""

from __future__ import annotations

import sys
import threading
from types import FrameType
from typing import Any

from ..attribute.userframes import is_program_file


def session_notes(skip_first: int, steps: int, windows: int, events: int, armed: bool) -> list[str]:
    """Nothing recorded, a skip that never ended, threads whose work was not recorded."""
    out: list[str] = []
    if skip_first and steps < skip_first:
        out.append(
            f"--skip-first {skip_first} was given but the program called kernelscope.step() "
            f"{steps} time(s): nothing after the skipped steps was recorded"
        )
    if windows == 0:
        why = "the program never ran a torch op or module call from its own code" if armed else "no step was due"
        out.append(f"nothing was recorded ({why})")
    elif events == 0:
        out.append("nothing was recorded: the profiled windows held no torch events")
    others = [t.name for t in program_threads()]
    if others:
        out.append(
            f"{len(others)} other Python thread(s) of the program alive at the end ({', '.join(others[:3])}): "
            "torch records only the thread that started profiling, so their torch work is not in this profile "
            "(run that work on the main thread while profiling to see it)"
        )
    return out


def program_threads() -> list[threading.Thread]:
    """Threads alive now that the program started, as far as can be told: its own code is on the thread's stack
    or is what the thread runs. Workers that torch or a library started (Inductor's compile pool, a tokenizer's
    pool), idle in library code, are not the program's: their work is the library's."""
    frames = sys._current_frames()
    out = []
    for t in threading.enumerate():
        if t is threading.main_thread() or not t.is_alive() or t.daemon or t.name.startswith("kernelscope"):
            continue
        if _runs_program_code(t) or _program_on_stack(frames.get(t.ident or -1)):
            out.append(t)
    return out


def _runs_program_code(t: threading.Thread) -> bool:
    target = getattr(t, "_target", None)
    run = type(t).run
    for fn in (target, run if run is not threading.Thread.run else None):
        code = getattr(getattr(fn, "__func__", fn), "__code__", None)
        if code is not None and is_program_file(code.co_filename):
            return True
    return False


def _program_on_stack(frame: FrameType | None) -> bool:
    while frame is not None:
        if is_program_file(frame.f_code.co_filename):
            return True
        frame = frame.f_back
    return False


def start_compile_capture(warnings: list[str]) -> Any:
    """torch.compile provenance capture, or None (with a warning) when torch's private APIs refuse."""
    try:
        from .compile import CompileCapture
    except ImportError:
        return None
    try:
        capture = CompileCapture()
        capture.__enter__()
    except Exception as exc:  # private APIs: degrade, never crash the user's run
        warnings.append(f"torch.compile provenance capture unavailable ({exc.__class__.__name__}: {exc})")
        return None
    return capture
