"""What differs between the torch versions of the supported range, for the live collector: small helpers that
feature-detect, so that the collector's own modules stay free of version checks (docs/run.md's version table)."""

from __future__ import annotations

from typing import Any

# torch 2.5's Python tracer can fail to replay a window's Python stack when the window is stopped
# ("!stack.empty() INTERNAL ASSERT FAILED at .../profiler_python.cpp ... Python replay stack is empty"):
# seen under kernelscope.profile() with a window opened inside its start(). torch pops its profiler state
# before it post-processes the events, so the profiler is off by then: the window's events are lost, the
# program goes on. Also on 2.5: a window opened while activation checkpointing recomputed inside backward() was
# switched off when backward() returned (the engine restores the caller's profiler state), and stopping it said
# "Can't disable Kineto profiler when it's not running" (live matrix, checkpointing, sampled).
_KNOWN_FAILURES = (
    ("INTERNAL ASSERT FAILED", "profiler_python"),
    ("Can't disable Kineto profiler when it's not running",),
)


def stop_profiler(prof: Any) -> str | None:
    """Stop a ``torch.autograd.profiler.profile`` window; None when it stopped cleanly, else why its events are
    lost (torch's own failure to post-process them, never raised into the program)."""
    try:
        prof.__exit__(None, None, None)
    except MemoryError as exc:  # (a program near its memory limit: torch post-processes a window in C++)
        if _profiler_enabled():
            raise
        prof.kineto_results = None
        return f"out of memory while torch post-processed a recorded window ({exc}); its events are left out"
    except RuntimeError as exc:
        text = str(exc)
        known = any(all(part in text for part in parts) for parts in _KNOWN_FAILURES)
        if not known or _profiler_enabled():
            raise
        prof.kineto_results = None
        first = text.strip().splitlines()[0] if text.strip() else type(exc).__name__
        return f"torch could not stop or post-process a recorded window ({first[:160]}); its events are left out"
    return None


def _profiler_enabled() -> bool:
    """Is torch's profiler (the C++ state, not the Python flag __exit__ did not reach) still on?"""
    import torch

    return bool(torch._C._autograd._profiler_enabled())


__all__ = ["stop_profiler"]
