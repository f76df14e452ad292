"""What a live session tells the user it may not expect, and starting compile capture without risk."""

from __future__ import annotations

from typing import Any

from .threads import ThreadWatch, every_thread


def session_notes(
    skip_first: int, steps: int, windows: int, events: int, armed: bool, threads: ThreadWatch | None = None
) -> list[str]:
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
    watch = threads if threads is not None else ThreadWatch()
    watch.look()
    note = every_thread().note(watch)
    if note is not None:
        out.append(note)
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
