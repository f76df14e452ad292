"""py-spy's ``--format chrometrace`` output -> the stacks it sampled, per thread, as segments in time.

py-spy writes a begin ("B") event for each frame that a sample adds to its thread's previous stack and an
end ("E") event for each it drops, at the microsecond (since py-spy's own start, on the monotonic clock)
it handled the sample; a sample whose stack equals the previous one writes nothing. So a thread's stack
is known from each change to the next: a **segment** (start, end, stack). With ``--idle`` every sample
holds every thread, so a segment ends at the next sample that saw that thread differently.
With ``--threads`` the outermost frame names the thread: ``thread (TID): NAME`` (TID: the OS thread id).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass

MAX_TRACE_BYTES = 1 << 30  # a sampler's file larger than this is not read

_THREAD = re.compile(r"^thread \((\d+)\)")


@dataclass(frozen=True, slots=True)
class StackFrame:
    name: str
    file: str  # a Python file, or a native frame's shared object
    line: int  # a Python frame's line (0 for native)

    @property
    def python(self) -> bool:
        return self.file.endswith(".py")


@dataclass(frozen=True, slots=True)
class Segment:
    os_tid: int
    start_us: int
    end_us: int
    stack: tuple[StackFrame, ...]  # outermost first, the thread frame left out


def read_segments(path: str) -> list[Segment]:
    """The segments of every thread in a chrometrace file, ordered by start."""
    if os.path.getsize(path) > MAX_TRACE_BYTES:
        raise ValueError(f"native samples file larger than {MAX_TRACE_BYTES} bytes")
    with open(path, encoding="utf-8", errors="replace") as fh:
        events = json.load(fh)
    return segments_of(events if isinstance(events, list) else [])


def segments_of(events: list[dict[str, object]]) -> list[Segment]:
    stacks: dict[object, list[StackFrame]] = {}
    open_at: dict[object, tuple[int, tuple[StackFrame, ...]]] = {}
    os_tids: dict[object, int] = {}
    out: list[Segment] = []
    last: tuple[object, int] | None = None

    def close(tid: object, ts: int) -> None:
        """A change on ``tid`` at ``ts``: the segment open there ends; the current stack opens one."""
        began = open_at.pop(tid, None)
        if began is not None and ts > began[0] and began[1]:
            out.append(Segment(os_tids.get(tid, -1), began[0], ts, began[1]))
        stack = stacks.get(tid, [])
        if stack:
            open_at[tid] = (ts, tuple(stack))

    pending: set[tuple[object, int]] = set()
    for ev in events:
        ph = ev.get("ph")
        if ph not in ("B", "E"):
            continue
        tid = ev.get("tid")
        ts_raw = ev.get("ts")
        if not isinstance(ts_raw, int | float):
            continue
        ts = int(ts_raw)
        key = (tid, ts)
        if last is not None and key != last and last in pending:
            pending.discard(last)
            close(*last)
        last = key
        pending.add(key)
        stack = stacks.setdefault(tid, [])
        name = str(ev.get("name", ""))
        if ph == "B":
            m = _THREAD.match(name) if not stack else None
            if m is not None:
                os_tids[tid] = int(m.group(1))
                stack.append(StackFrame(name, "", 0))  # (a placeholder: left out of the segments)
                continue
            args = ev.get("args")
            file = str(args.get("filename", "")) if isinstance(args, dict) else ""
            line_raw = args.get("line", 0) if isinstance(args, dict) else 0
            stack.append(StackFrame(name, file, int(line_raw) if isinstance(line_raw, int) else 0))
        elif stack:
            stack.pop()
    for key in list(pending):
        close(*key)
    # a stack minus the thread placeholder
    fixed = [Segment(s.os_tid, s.start_us, s.end_us, s.stack[1:] if s.os_tid >= 0 else s.stack) for s in out]
    fixed = [s for s in fixed if s.stack]
    fixed.sort(key=lambda s: (s.os_tid, s.start_us))
    return fixed
