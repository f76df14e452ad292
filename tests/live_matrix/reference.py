"""Count the op calls a program makes, independently of kernelscope: torch's own profiler (no stacks, no
shapes) around the whole program, compile work left out (the spans in which Dynamo compiles, from its
compile callbacks). Usage: ``python reference.py [--dispatch|--per-step] OUT.json PROGRAM [ARGS...]``; writes
{op: calls} for ``aten::`` ops on every thread; ``--per-step`` writes a list of such counts, one per step
(the ops that began before the first optimizer step returned, then between two optimizer steps returning,
then after the last). ``--dispatch`` counts with a TorchDispatchMode instead, for a
program that runs torch.profiler itself (one profiler per thread): it sees the ops the program calls, not
the ops nested inside them, so the recorded counts are compared against a lower bound there."""

from __future__ import annotations

import json
import runpy
import sys
import time
from collections import Counter


def by_dispatch(out: str, program: str) -> None:
    from torch.utils._python_dispatch import TorchDispatchMode

    counts: Counter[str] = Counter()

    class Count(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
            name = "aten::" + func.__name__.split(".")[0]
            # record_function ranges are not ops; a dispatch mode adds detach calls of its own (90 under
            # the mode against 64 under torch.profiler for uses_torch_profiler.py)
            if not name.startswith("aten::_record_function") and name != "aten::detach":
                counts[name] += 1
            return func(*args, **(kwargs or {}))

    with Count():
        runpy.run_path(program, run_name="__main__")
    with open(out, "w") as f:
        json.dump(counts, f)


def every_thread_config() -> object | None:
    """torch's every-thread mode where this torch has it (2.8 and later); else None: the main thread and the
    threads that inherit its profiler state only (the matrix skips its threads cell there)."""
    from torch._C._profiler import _ExperimentalConfig

    try:
        return _ExperimentalConfig(profile_all_threads=True)
    except TypeError:
        return None


def main() -> None:
    dispatch = sys.argv[1] == "--dispatch"
    per_step = sys.argv[1] == "--per-step"
    out, program, *args = sys.argv[2:] if dispatch or per_step else sys.argv[1:]
    import torch
    from torch._dynamo.callback import callback_handler
    from torch.autograd.profiler import profile
    from torch.optim.optimizer import register_optimizer_step_post_hook

    boundaries: list[int] = []
    register_optimizer_step_post_hook(lambda *_: boundaries.append(time.time_ns()))
    spans: list[list[int]] = []
    # (torch 2.5 calls these with no argument, later versions with one)
    callback_handler.register_start_callback(lambda *_a: spans.append([time.time_ns(), 1 << 62]))
    callback_handler.register_end_callback(lambda *_a: spans[-1].__setitem__(1, time.time_ns()))
    sys.argv = [program, *args]
    sys.path.insert(0, program.rsplit("/", 1)[0] if "/" in program else ".")
    if dispatch:
        return by_dispatch(out, program)
    prof = profile(use_kineto=True, experimental_config=every_thread_config())
    prof.__enter__()
    try:
        runpy.run_path(program, run_name="__main__")
    finally:
        prof.__exit__(None, None, None)
    import bisect

    steps: list[Counter[str]] = [Counter() for _ in range(len(boundaries) + 1)]
    counts: Counter[str] = Counter()
    stack = list(prof.kineto_results.experimental_event_tree())
    while stack:
        ev = stack.pop()
        if ev.tag.name != "TorchOp":
            stack.extend(ev.children)
            continue
        start = ev.start_time_ns
        if any(a <= start <= b for a, b in spans):
            continue  # compile work
        if ev.name.startswith("aten::"):
            counts[ev.name] += 1
            steps[bisect.bisect_right(boundaries, start)][ev.name] += 1
        stack.extend(ev.children)
    del torch
    with open(out, "w") as f:
        json.dump(steps if per_step else counts, f)


if __name__ == "__main__":
    main()
