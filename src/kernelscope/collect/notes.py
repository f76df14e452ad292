"""What a live session tells the user it may not expect, and starting compile capture without risk."""

from __future__ import annotations

from typing import Any


def session_notes(
    skip_first: int, steps: int, windows: int, events: int, armed: bool, threads_held: bool = False
) -> list[str]:
    """Nothing recorded, a skip that never ended, other threads' ops left out (``threads_held``: some windows
    recorded the main thread only, threads.py)."""
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
    if threads_held:
        out.append(
            "ops on threads the program started were recorded only until the first window change while they "
            "ran (later windows recorded the main thread only: torch cannot start a new every-thread window "
            "while another thread may be inside an op), and without the lines that issued them"
        )
    return out


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
