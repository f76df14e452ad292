"""Python frames that run on from one recording window into the next: one call, not one per window.

torch's Python tracer reports every frame on the stack when it starts as a call made at that moment
(its "start-up" frames). A frame that was already running when the previous window stopped (the
program's ``main``, its training loop) would so be counted once more for every window it spans. The
session remembers the frames on the main thread's stack when a window stops (``at_close``); when the
next one opens, ``at_open`` says which frames of the stack are those very objects (``is``, not an equal
code: a function called again between two windows is a new call). The fold then marks the matching
start-up events (``continued_events``), whose rows count no call.

Holding the stopped stack's frames keeps their locals alive until the next window opens (at once when
recording everything; a frame that returns in between keeps its locals until then otherwise).
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from types import FrameType
from typing import Any

from .own_frames import program_frame

# (function name, was running when the last window stopped), outermost frame first
Chain = tuple[tuple[str, bool], ...]


def _stack(frame: FrameType | None) -> list[FrameType]:
    frames: list[FrameType] = []
    while frame is not None:
        frames.append(frame)
        frame = frame.f_back
    frames.reverse()
    return frames


class OpenFrames:
    """The main thread's frames at the last stop, matched against the stack at the next start."""

    def __init__(self) -> None:
        self._at_close: list[FrameType] = []

    def at_close(self) -> None:
        if threading.current_thread() is threading.main_thread():
            self._at_close = _stack(program_frame())
        else:
            self._at_close = _stack(sys._current_frames().get(threading.main_thread().ident or 0))

    def at_open(self) -> Chain:
        """The stack about to be recorded, each frame with whether it ran on from the last window."""
        held = {id(f) for f in self._at_close}  # the frames are held: an equal id is the same frame
        if not held or threading.current_thread() is not threading.main_thread():
            self._at_close = []
            return ()
        chain = tuple((f.f_code.co_name, id(f) in held) for f in _stack(program_frame()))
        self._at_close = []
        return chain

    def clear(self) -> None:
        self._at_close = []


def _aligned(roots: Iterable[Any], names: tuple[str, ...], tag_of: Callable[[Any], str]) -> dict[int, Any]:
    """The start-up ``PyCall`` events (the first-child chain from a root) of the frames of a stack (function
    ``names``, outermost first), by index in the stack. The two are aligned at their inner end: torch may
    leave out the outermost frames of a deep stack, and records frames inside the window's start below it.
    Of the roots (one per thread), the one whose chain matches the most frames: another thread's chain can
    hold a frame of the same name (``inner``, ``wrapper``)."""
    best: dict[int, Any] = {}
    if not names:
        return best
    for root in roots:
        events: list[Any] = []
        ev: Any = root
        while ev is not None and tag_of(ev) == "PyCall" and len(events) <= len(names) + 16:
            events.append(ev)
            ev = next((c for c in ev.children if tag_of(c) == "PyCall"), None)
        got = [e.extra_fields.callsite.function_name for e in events]
        ends = [i for i, name in enumerate(got) if name == names[-1]]
        if not ends:
            continue
        out: dict[int, Any] = {}
        e, c = ends[-1], len(names) - 1
        while e >= 0 and c >= 0 and got[e] == names[c]:
            out[c] = events[e]
            e -= 1
            c -= 1
        if len(out) > len(best):
            best = out
    return best


def continued_events(roots: Iterable[Any], chain: Chain, tag_of: Callable[[Any], str]) -> set[tuple[int, int]]:
    """(start, thread) of the start-up ``PyCall`` events that ``chain`` marks as running on from the last window.
    (Not ``id``: torch's event objects are made anew each time they are read.)"""
    if not chain or not any(cont for _name, cont in chain):
        return set()
    events = _aligned(roots, tuple(name for name, _cont in chain), tag_of)
    return {(ev.start_time_ns, ev.start_tid) for c, ev in events.items() if chain[c][1]}


@dataclass(frozen=True)
class Split:
    """The program's ``record_function`` ranges split at a window's edges (``safepoint.Ranges``).

    ``ranges``: those begun again as the window opened. Each belongs inside the frame that entered it, from
    that frame's start-up event on (torch's tree has it as a leaf of the session's own call that began it).
    ``suspended``: those ended as the window stopped, inside the session's own call: each runs to the
    window's end, with the frames inside it."""

    stack: tuple[str, ...] = ()  # the program's stack as the window opened: function names, outermost first
    # per range begun again: (its frame's index in ``stack``, name, ran on from the last window)
    ranges: tuple[tuple[int, str, bool], ...] = ()
    suspended: tuple[str, ...] = ()

    @classmethod
    def resumed(cls, ranges: Iterable[tuple[FrameType, str, bool]]) -> Split | None:
        ranges = tuple(ranges)
        if not ranges:
            return None
        frames = _stack(program_frame())
        index = {id(f): i for i, f in enumerate(frames)}
        return cls(
            tuple(f.f_code.co_name for f in frames),
            tuple((index.get(id(frame), -1), name, ran_on) for frame, name, ran_on in ranges),
        )

    def starts(self, roots: Iterable[Any], tag_of: Callable[[Any], str]) -> dict[str, list[tuple[int, bool]]]:
        """Per range begun again, by name, in the order begun: where its row starts (-1: where torch recorded
        it) and whether it ran on from the last window (its row counts no call)."""
        if not self.ranges:
            return {}
        events = _aligned(roots, self.stack, tag_of)
        out: dict[str, list[tuple[int, bool]]] = {}
        for i, name, ran_on in self.ranges:
            ev = events.get(i)
            # (1 ns in: the frame's own row, which starts with its event and runs past the range, sorts outside it)
            out.setdefault(name, []).append((ev.start_time_ns + 1 if ev is not None else -1, ran_on))
        return out
