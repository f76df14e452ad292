"""Run-time call sites of executions: the k-th recorded call of a jitted function is its k-th execution.

A live JAX run records, per jitted function of the program, the user stack of every top-level call
(``collect.jax_calls``). On XLA:CPU every op event carries the ``run_id`` of its execution; the executions
of a function's executables, ordered by their first op, pair in order with its recorded calls. When the
counts differ (a call failed before running, a function was also called inside another's trace) the
function keeps the call line of its first trace, and the import says so (also where executions carry no
``run_id``, as GPU device events in the traces seen here do not).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence

from ...attribute.userframes import display_path
from ...model import Frame
from .hlo import HloModule
from .reader import OpEvent

Stack = tuple[tuple[str, int, str], ...]  # (file, line, function), outermost first: collect.jax_calls.Stack


def sites_of_runs(
    ops: Iterable[OpEvent],
    modules: Mapping[int, HloModule],
    calls: Mapping[str, Sequence[Stack]],
    warnings: Counter[str],
) -> dict[tuple[int, int], tuple[Frame, ...]]:
    """(program id, run id) -> the user frames of the call that ran it, outermost first."""
    first: dict[tuple[int, int], int] = {}
    unpaired: set[int] = set()  # programs that ran without run ids (GPU device events carry none here)
    for ev in ops:
        if ev.program_id < 0:
            continue
        if ev.run_id is None:
            unpaired.add(ev.program_id)
            continue
        key = (ev.program_id, ev.run_id)
        start = first.get(key)
        if start is None or ev.start_ns < start:
            first[key] = ev.start_ns
    by_function: dict[str, list[tuple[int, int, int]]] = defaultdict(list)
    for (pid, run), start in first.items():
        module = modules.get(pid)
        if module is not None and module.name.startswith("jit_"):
            by_function[module.name[4:]].append((start, pid, run))
    for pid in sorted(unpaired):
        module = modules.get(pid)
        if module is not None and module.name.startswith("jit_") and calls.get(module.name[4:]):
            warnings[
                f"jit({module.name[4:]}): its executions carry no run ids in this XPlane, so its calls cannot be "
                "paired with them; its time stays at the call line of its first trace"
            ] += 1
    frames: dict[Stack, tuple[Frame, ...]] = {}
    out: dict[tuple[int, int], tuple[Frame, ...]] = {}
    for function, runs in by_function.items():
        stacks = calls.get(function)
        if not stacks:
            continue
        if len(stacks) != len(runs):
            warnings[
                f"jit({function}): {len(stacks)} calls recorded but {len(runs)} executions; its time stays at the "
                "call line of its first trace"
            ] += 1
            continue
        runs.sort()
        for (_start, pid, run), stack in zip(runs, stacks, strict=True):
            hit = frames.get(stack)
            if hit is None:
                hit = frames[stack] = tuple(Frame.python(display_path(f), line, fn) for f, line, fn in stack)
            out[(pid, run)] = hit
    return out


__all__ = ["sites_of_runs"]
