"""Item 4's lever, measured before it is built: the issuing line of every op captured without torch's Python tracer,
against the tracer (stacks: what kernelscope's windows record today). One process, windows of ``--steps``
nanoGPT steps (or, ``--model gpt2``, a ``transformers`` GPT-2 from a config), round-robin (CPU time; medians over
every step and every stop):

- ``plain``: the steps alone;
- ``stacks``: torch's profiler with stacks (its Python tracer records every Python call);
- ``no stacks``: torch's profiler without stacks (torch's floor: ops only);
- ``no stacks + mode``: the same, with a ``TorchFunctionMode`` that passes every call through (what a mode
  costs by itself);
- ``no stacks + hooks``: the same, with a ``TorchFunctionMode`` that stores, for every torch call made from
  Python (operators included), its start and end (``time.time_ns``: the clock of torch's event times) and the
  innermost frame of a file outside torch (its code and line), and global module hooks that store each module
  call's start and end;
- Python 3.12+, nanoGPT: ``no stacks + monitoring``: ``sys.monitoring`` CALL, PY_START and PY_RETURN events on
  the program's own code objects only (library code raises none); ``no stacks + monitoring lines``: LINE
  instead of CALL events (the line each of the program's frames is on, operators included).

For each: the steps' time (as a multiple of ``plain``'s), torch's stop, the window's events, and for the hooks
the share of the window's top-level ops on the main thread whose start lies inside a stored call, or inside
one of the program's frames (backward's ops, run by autograd's thread, are placed by their forward op, as
today): the ops they can place without the tracer. On 3.12+ one more window records with the tracer and the
LINE events both on, and counts the ops to which both give the same line. The join by time is what a fold
would do; it is checked here, not built.

    python benchmarks/line_capture.py [--steps 10] [--repeats 3] [--model nanogpt|gpt2]
"""

from __future__ import annotations

import argparse
import bisect
import collections
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))


def _model(name: str) -> Any:
    """One training step of the model named."""
    import torch

    torch.set_num_threads(1)
    torch.manual_seed(0)
    if name == "gpt2":
        from transformers import GPT2Config, GPT2LMHeadModel

        cfg = GPT2Config(n_layer=4, n_head=4, n_embd=256, vocab_size=1024, n_positions=128)
        model = GPT2LMHeadModel(cfg)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
        ids = torch.randint(0, cfg.vocab_size, (4, 64))

        def step() -> None:
            out = model(input_ids=ids, labels=ids)
            opt.zero_grad(set_to_none=True)
            out.loss.backward()
            opt.step()

        return step
    import train_nanogpt as code

    model = code.NanoGPT()
    opt = torch.optim.AdamW(model.parameters(), lr=6e-4)
    corpus = torch.randint(0, 256, (200_000,))
    return lambda: code.train_step(model, opt, corpus)


class Capture:
    """The hooks: torch calls from Python and module calls, stored as they come (nothing else is done)."""

    def __init__(self, store: bool = True) -> None:
        import torch
        from torch.overrides import TorchFunctionMode

        self.calls: list[tuple[int, int, Any, int]] = []  # (start ns, end ns, code, line)
        self.modules: list[tuple[int, int]] = []  # (ns, id(module)); end: id negative
        torch_dir = str(Path(torch.__file__).parent)
        library: dict[Any, bool] = {}
        calls, modules = self.calls, self.modules
        now = time.time_ns
        getframe = sys._getframe

        class Null(TorchFunctionMode):
            def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
                return func(*args, **(kwargs or {}))

        class Mode(TorchFunctionMode):
            def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
                f = getframe(1)
                while f is not None:
                    code = f.f_code
                    lib = library.get(code)
                    if lib is None:
                        lib = library[code] = code.co_filename.startswith(torch_dir)
                    if not lib:
                        break
                    f = f.f_back
                t0 = now()
                out = func(*args, **(kwargs or {}))
                calls.append((t0, now(), f.f_code if f is not None else None, f.f_lineno if f is not None else 0))
                return out

        def pre(module: Any, args: Any) -> None:
            modules.append((now(), id(module)))

        def post(module: Any, args: Any, out: Any) -> None:
            modules.append((now(), -id(module)))

        self.mode = Mode() if store else Null()
        self.store = store
        self._pre, self._post = pre, post
        self._handles: list[Any] = []

    def __enter__(self) -> Capture:
        from torch.nn.modules import module as hooks

        if self.store:
            self._handles = [
                hooks.register_module_forward_pre_hook(self._pre),
                hooks.register_module_forward_hook(self._post),
            ]
        self.mode.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.mode.__exit__(*exc)
        for h in self._handles:
            h.remove()


class Monitoring:
    """Python 3.12+: ``sys.monitoring`` events on the program's own code objects only (``set_local_events``): each
    call made from them (its start, the code and the instruction: the line) and each start and return of one of
    them (the user frames' stack). Library code raises no event. The benchmark's program's code objects are
    listed up front; a collector would add each user code object as it first runs."""

    TOOL = 3  # (a free tool id: 0-2 and 5 are the debugger's, coverage's and profilers')

    def __init__(self, codes: list[Any], lines: bool = False) -> None:
        self.codes = codes
        self.lines = lines  # LINE events (every line of the program's own code run) instead of CALL events
        self.events: list[tuple[int, int, Any, int]] = []  # (ns, kind, code, offset): 0 call, 1 start, 2 return

    def __enter__(self) -> Monitoring:
        mon = sys.monitoring  # type: ignore[attr-defined]
        ev, now, append = mon.events, time.time_ns, self.events.append
        mon.use_tool_id(self.TOOL, "kernelscope-bench")

        def call(code: Any, offset: int, callable_: Any, arg0: Any) -> None:
            append((now(), 0, code, offset))

        def line(code: Any, number: int) -> None:
            append((now(), 0, code, number))

        def start(code: Any, offset: int) -> None:
            append((now(), 1, code, offset))

        def ret(code: Any, offset: int, value: Any) -> None:
            append((now(), 2, code, offset))

        first = ev.LINE if self.lines else ev.CALL
        mon.register_callback(self.TOOL, first, line if self.lines else call)
        mon.register_callback(self.TOOL, ev.PY_START, start)
        mon.register_callback(self.TOOL, ev.PY_RETURN, ret)
        for code in self.codes:
            mon.set_local_events(self.TOOL, code, first | ev.PY_START | ev.PY_RETURN)
        return self

    def __exit__(self, *exc: Any) -> None:
        mon = sys.monitoring  # type: ignore[attr-defined]
        for code in self.codes:
            mon.set_local_events(self.TOOL, code, 0)
        mon.free_tool_id(self.TOOL)


def user_codes(*modules: Any) -> list[Any]:
    """Every code object defined in ``modules`` (functions, methods, and the code nested in them)."""
    out: list[Any] = []
    seen: set[int] = set()

    def add(code: Any) -> None:
        if id(code) in seen:
            return
        seen.add(id(code))
        out.append(code)
        for const in code.co_consts:
            if hasattr(const, "co_code"):
                add(const)

    for mod in modules:
        for value in vars(mod).values():
            fns = [value]
            if isinstance(value, type):
                fns = list(vars(value).values())
            for fn in fns:
                code = getattr(fn, "__code__", None)
                if code is not None and code.co_filename == mod.__file__:
                    add(code)
    return out


def inside_frames(starts: list[int], events: list[tuple[int, int, Any, int]]) -> float:
    """The share of ``starts`` made while one of the program's own frames ran (its start seen, its return not)."""
    if not starts:
        return 0.0
    times, depths, depth = [], [], 0
    for t, kind, _, _ in events:
        depth += 1 if kind == 1 else -1 if kind == 2 else 0
        times.append(t)
        depths.append(depth)
    # (a frame already running when the window opened has no start: depths are relative; the least is outside)
    floor = min(depths, default=0)
    hit = 0
    for s in starts:
        i = bisect.bisect_right(times, s) - 1
        if i >= 0 and depths[i] > floor:
            hit += 1
    return hit / len(starts)


def tracer_lines(roots: Any, tid: int, user: Any) -> list[tuple[int, str, int]]:
    """(start, file, line) of each op on thread ``tid`` that sits below a Python call, by torch's tracer: the
    calling line of its innermost Python call made from a file ``user`` accepts (the line kernelscope shows)."""
    out: list[tuple[int, str, int]] = []
    stack: list[tuple[Any, Any]] = [(r, None) for r in roots if r.start_tid == tid]
    while stack:
        ev, where = stack.pop()
        kind = type(ev.extra_fields).__name__
        if kind.endswith("PyCall") or kind.endswith("PyCCall"):
            caller = ev.extra_fields.caller
            if user(caller.file_name):
                where = (caller.file_name, caller.line_number)
        elif kind.endswith("TorchOp"):
            if where is not None:
                out.append((ev.start_time_ns, *where))
            continue  # (ops inside ops: their parent's line)
        stack.extend((c, where) for c in ev.children)
    return sorted(out)


def monitored_line(events: list[tuple[int, int, Any, int]]) -> Any:
    """A function: a time -> (file, line) of the innermost of the program's frames running then, by its LINE
    events (None outside them)."""
    times: list[int] = []
    where: list[tuple[str, int] | None] = []
    frames: list[list[Any]] = []  # [code, line]
    for t, kind, code, n in events:
        if kind == 1:
            frames.append([code, None])
        elif kind == 2:
            if frames:
                frames.pop()
        elif frames and frames[-1][0] is code:
            frames[-1][1] = n
        else:  # a frame that was running when monitoring began
            frames.append([code, n])
        top = frames[-1] if frames else None
        times.append(t)
        where.append((top[0].co_filename, top[1]) if top is not None and top[1] is not None else None)

    def at(t: int) -> tuple[str, int] | None:
        i = bisect.bisect_right(times, t) - 1
        return where[i] if i >= 0 else None

    return at


def main_thread(roots: Any, tid: int) -> int:
    """torch's id of the program's thread: ``tid`` if torch uses it, else the thread with the most top-level events."""
    tids = collections.Counter(ev.start_tid for ev in roots)
    return tid if tid in tids else tids.most_common(1)[0][0]


def top_ops(roots: Any, tid: int) -> list[int]:
    """Start times of the top-level ops on thread ``tid`` (the program's thread)."""
    out = []
    for ev in roots:
        if ev.start_tid == tid and type(ev.extra_fields).__name__.endswith("TorchOp"):
            out.append(ev.start_time_ns)
    return out


def placed(starts: list[int], calls: list[tuple[int, int, Any, int]]) -> float:
    """The share of ``starts`` inside a stored call (calls do not overlap: the mode sees only outermost calls)."""
    if not starts:
        return 0.0
    begins = [c[0] for c in calls]
    hit = 0
    for s in starts:
        i = bisect.bisect_right(begins, s) - 1
        if i >= 0 and calls[i][0] <= s <= calls[i][1]:
            hit += 1
    return hit / len(starts)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--model", choices=("nanogpt", "gpt2"), default="nanogpt")
    args = ap.parse_args()

    import threading

    import torch
    from torch.autograd.profiler import _disable_profiler, profile

    step = _model(args.model)
    for _ in range(3):
        step()
    tid = threading.get_native_id()
    rows: dict[str, list[dict[str, float]]] = collections.defaultdict(list)
    per_step: dict[str, list[float]] = collections.defaultdict(list)
    configs = ["plain", "stacks", "no stacks", "no stacks + mode", "no stacks + hooks"]
    codes: list[Any] = []
    if hasattr(sys, "monitoring") and args.model == "nanogpt":
        import train_nanogpt

        configs += ["no stacks + monitoring", "no stacks + monitoring lines"]
        codes = [*user_codes(train_nanogpt), step.__code__]  # (the program's: not this script's own hooks)
    for _ in range(args.repeats):
        for name in configs:
            cap: Any = None
            if "monitoring" in name:
                cap = Monitoring(codes, lines=name.endswith("lines"))
            elif "+" in name:
                cap = Capture(store=name.endswith("hooks"))
            p = None
            if name != "plain":
                p = profile(use_kineto=True, with_stack=name == "stacks", record_shapes=False)
                p.__enter__()  # type: ignore[no-untyped-call]
            if cap is not None:
                cap.__enter__()
            c0, t0 = time.process_time(), time.perf_counter()
            for _ in range(args.steps):
                c = time.process_time()
                step()
                per_step[name].append(time.process_time() - c)
            c1, t1 = time.process_time(), time.perf_counter()
            if cap is not None:
                cap.__exit__(None, None, None)
            row = {"steps": t1 - t0, "steps_cpu": c1 - c0, "stop": 0.0, "events": 0.0, "placed": float("nan")}
            if p is not None:
                results = _disable_profiler()
                p.enabled = False
                row["stop"] = time.perf_counter() - t1
                roots = results.experimental_event_tree()
                n, stack = 0, list(roots)
                while stack:
                    ev = stack.pop()
                    n += 1
                    stack.extend(ev.children)
                row["events"] = n
                if isinstance(cap, Monitoring):
                    row["calls"] = len(cap.events) / args.steps
                    main_tid = main_thread(roots, tid)
                    row["placed"] = inside_frames(top_ops(roots, main_tid), cap.events)
                if isinstance(cap, Capture) and cap.store:
                    main_tid = main_thread(roots, tid)
                    row["placed"] = placed(top_ops(roots, main_tid), cap.calls)
                    row["calls"] = len(cap.calls) / args.steps
                    row["module_calls"] = len(cap.modules) / 2 / args.steps
                del roots, results
            rows[name].append(row)
    plain = statistics.median(per_step["plain"])
    print(
        f"Python {sys.version.split()[0]}, torch {torch.__version__}; {args.model}, {args.steps}-step windows x "
        f"{args.repeats}; a step's CPU ms (median of every step), torch's "
        "stop (median), x = to plain's step"
    )
    print(f"{'window':<29} {'step ms':>8} {'x':>6} {'stop s':>7} {'added x':>8} {'events':>8} {'ops placed':>10}")
    for name, rs in rows.items():
        m = {k: statistics.median(r[k] for r in rs) for k in rs[0]}
        one = statistics.median(per_step[name])
        added = (one - plain + m["stop"] / args.steps) / plain
        share = "" if m["placed"] != m["placed"] else f"{100 * m['placed']:.1f}%"
        print(
            f"{name:<29} {one * 1e3:>8.1f} {one / plain:>5.2f}x {m['stop']:>7.3f} {added:>7.2f}x "
            f"{int(m['events']):>8,} {share:>10}"
        )
    h = rows["no stacks + hooks"]
    print(
        f"hooks: {statistics.median(r['calls'] for r in h):.0f} torch calls and "
        f"{statistics.median(r['module_calls'] for r in h):.0f} module calls a step stored"
    )
    if codes:
        agree(step, codes, tid, args.steps)
        parity(step, codes, tid, args.steps)
    for name in ("no stacks + monitoring", "no stacks + monitoring lines"):
        if name in rows:
            n = statistics.median(r["calls"] for r in rows[name])
            print(f"{name.removeprefix('no stacks + ')}: {n:.0f} events a step from the program's own code")
    print(
        "'added x': what recording adds to a step (its time over plain's, and its share of torch's stop), per plain step"
    )


def agree(step: Any, codes: list[Any], tid: int, steps: int) -> None:
    """One window with torch's tracer and the LINE events both on: does each op get the same line from either?"""
    from torch.autograd.profiler import _disable_profiler, profile

    from kernelscope.attribute.userframes import is_user_file

    p = profile(use_kineto=True, with_stack=True)
    p.__enter__()  # type: ignore[no-untyped-call]
    with Monitoring(codes, lines=True) as mon:
        for _ in range(steps):
            step()
    results = _disable_profiler()
    p.enabled = False
    roots = results.experimental_event_tree()
    main_tid = main_thread(roots, tid)
    ops = tracer_lines(roots, main_tid, is_user_file)
    at = monitored_line(mon.events)

    def key(where: tuple[str, int] | None) -> tuple[str, int] | None:  # (torch's tracer may give a shorter path)
        return None if where is None else (os.path.basename(where[0]), where[1])

    same = sum(1 for t, file, line in ops if key(at(t)) == key((file, line)))
    misses = collections.Counter(
        (f"{os.path.basename(file)}:{line}", str(key(at(t))))
        for t, file, line in ops
        if key(at(t)) != key((file, line))
    )
    print(
        f"the same line from torch's tracer and from LINE events: {same:,} of {len(ops):,} ops "
        f"({100 * same / max(len(ops), 1):.1f}%); differing: {misses.most_common(3)}"
    )


# --- the fold's side: the frames and lines of the LINE events as the tracer's calls (a prototype, not the collector's)
class _Tag:
    def __init__(self, name: str) -> None:
        self.name = name


_PYCALL, _PYCCALL = _Tag("PyCall"), _Tag("PyCCall")
_MODULE_PY = ("torch/nn/modules/module.py", 0, "_call_impl")


class _Site:
    def __init__(self, file_name: str, line_number: int, function_name: str) -> None:
        self.file_name, self.line_number, self.function_name = file_name, line_number, function_name


class _Mod:
    def __init__(self, module: Any) -> None:
        self.self_ptr, self.cls_name = id(module), type(module).__name__


class _Fields:
    def __init__(self, caller: _Site, callsite: _Site, module: _Mod | None) -> None:
        self.caller, self.callsite, self.module = caller, callsite, module


class _Node:
    """One of the program's frames, a run of one of its lines, or a module call, over [start, end]; read by
    ``TorchEvents.add`` as the tracer's PyCall / PyCCall events are (duck-typed)."""

    def __init__(self, kind: str, start: int, what: Any, parent: _Node | None) -> None:
        self.kind, self.start, self.end, self.what, self.parent = kind, start, start, what, parent
        self.kids: list[Any] = []
        self.start_tid = 0
        self.name = "line"
        self._fields: _Fields | None = None

    @property
    def start_time_ns(self) -> int:
        return self.start

    @property
    def duration_time_ns(self) -> int:
        return max(self.end - self.start, 0)

    @property
    def tag(self) -> _Tag:
        return _PYCCALL if self.kind == "line" else _PYCALL

    @property
    def children(self) -> list[Any]:
        return self.kids

    @property
    def extra_fields(self) -> _Fields:
        # (one object a node: ``TorchEvents`` tells a calling frame's runs of its lines apart by its fields' id)
        if self._fields is None:
            self._fields = self._make_fields()
        return self._fields

    def _make_fields(self) -> _Fields:
        p = self.parent
        if p is not None and p.kind == "line":
            code = p.parent.what if p.parent is not None else None
            caller = _Site(code.co_filename, p.what, code.co_name) if code is not None else _Site(*_MODULE_PY)
        elif p is not None and p.kind == "module":
            caller = _Site(*_MODULE_PY)
        else:
            caller = _Site("<running when the window opened>", 0, "")
        if self.kind == "frame":
            c = self.what
            return _Fields(caller, _Site(c.co_filename, c.co_firstlineno, c.co_name), None)
        if self.kind == "module":
            return _Fields(caller, _Site(*_MODULE_PY), _Mod(self.what))
        code = p.what if p is not None else None  # (a line's node: its frame's code, this line)
        here = _Site(code.co_filename, self.what, code.co_name) if code is not None else caller
        return _Fields(here, here, None)


def frames_tree(events: list[tuple[int, int, Any, int]], modules: list[tuple[int, int, Any]], end: int) -> _Node:
    """The program's frames (PY_START to PY_RETURN), their lines' runs (LINE to the next event of the frame) and
    module calls (the module hooks), nested as they ran. ``events``: (ns, 0 line / 1 start / 2 return, code, n);
    ``modules``: (ns, 3 enter / 4 leave, module)."""
    root = _Node("root", 0, None, None)
    merged = sorted(
        [(t, i, k, c, n) for i, (t, k, c, n) in enumerate(events)]
        + [(t, len(events) + i, k, m, 0) for i, (t, k, m) in enumerate(modules)]
    )
    stack: list[_Node] = [root]

    def push(kind: str, t: int, what: Any) -> _Node:
        node = _Node(kind, t, what, stack[-1])
        stack[-1].kids.append(node)
        stack.append(node)
        return node

    def pop_to(kind: str, what: Any, t: int, keep: bool) -> bool:
        """Close nodes down to the innermost ``kind`` node of ``what`` (kept open where ``keep``)."""
        for i in range(len(stack) - 1, 0, -1):
            if stack[i].kind == kind and stack[i].what is what:
                for node in stack[i + (1 if keep else 0) :]:
                    node.end = t
                del stack[i + (1 if keep else 0) :]
                return True
        return False

    for t, _, kind, what, n in merged:
        if kind == 1:
            push("frame", t, what)
        elif kind == 2:
            if not pop_to("frame", what, t, keep=False):
                for node in stack[1:]:  # a frame running when the window opened returned: all inside it closes
                    node.end = t
                del stack[1:]
        elif kind == 0:
            if not pop_to("frame", what, t, keep=True):
                for node in stack[1:]:
                    node.end = t
                del stack[1:]
                push("frame", t, what)  # (running when the window opened)
            push("line", t, n)
        elif kind == 3:
            push("module", t, what)
        else:
            pop_to("module", what, t, keep=False)
    for node in stack[1:]:
        node.end = end
    return root


def _place(root: _Node, ops: list[Any]) -> None:
    """Each op under the innermost node whose span holds its start."""
    for op in ops:
        node, t = root, op.start_time_ns
        while True:
            kids = [k for k in node.kids if isinstance(k, _Node)]
            i = bisect.bisect_right([k.start for k in kids], t) - 1
            if i >= 0 and kids[i].start <= t <= kids[i].end:
                node = kids[i]
                continue
            break
        node.kids.append(op)
    # each node's span covers what was placed in it (torch's clock and ``time.time_ns`` differ by a few µs: an op
    # that started inside a module call may end after the hook saw the call end)
    order: list[_Node] = []
    stack = [root]
    while stack:
        node = stack.pop()
        node.kids.sort(key=lambda k: k.start_time_ns)
        order.append(node)
        stack.extend(k for k in node.kids if isinstance(k, _Node))
    for node in reversed(order):
        for k in node.kids:
            node.end = max(node.end, k.start_time_ns + k.duration_time_ns)


def _without_python(roots: list[Any]) -> list[Any]:
    """torch's roots with its Python events taken out (their ops move up): what a window without stacks holds."""
    out: list[Any] = []
    stack = list(reversed(roots))
    while stack:
        ev = stack.pop()
        kind = type(ev.extra_fields).__name__
        if kind.endswith("PyCall") or kind.endswith("PyCCall"):
            stack.extend(reversed(ev.children))
        else:
            out.append(ev)
    return out


def parity(step: Any, codes: list[Any], tid: int, steps: int) -> None:
    """One window with torch's tracer (and kernelscope's operator wrappers), the LINE events and the module hooks
    all on; each folded by kernelscope's ``TorchEvents`` and engine: from the tracer's events, and from the LINE
    events with the tracer's taken out (nodes built from them instead: ``frames_tree``)."""
    import re

    from torch.autograd.profiler import _disable_profiler, profile
    from torch.nn.modules import module as hooks

    from kernelscope.attribute.engine import Attributor
    from kernelscope.attribute.tables import EventTables
    from kernelscope.collect.torch_events import TorchEvents
    from kernelscope.collect.torch_lines import Counter, OperatorLines

    modules: list[tuple[int, int, Any]] = []
    handles = [
        hooks.register_module_forward_pre_hook(lambda m, a: modules.append((time.time_ns(), 3, m))),
        hooks.register_module_forward_hook(lambda m, a, o: modules.append((time.time_ns(), 4, m))),
    ]
    # kernelscope's operator wrappers, as in its windows: the tracer then sees operators' lines too
    wrappers = OperatorLines(Counter(None, 1 << 62))
    wrappers.install()
    p = profile(use_kineto=True, with_stack=True)
    p.__enter__()  # type: ignore[no-untyped-call]
    with Monitoring(codes, lines=True) as mon:
        for _ in range(steps):
            step()
    end = time.time_ns()
    wrappers.remove()
    for h in handles:
        h.remove()
    results = _disable_profiler()
    p.enabled = False
    roots = list(results.experimental_event_tree())
    main_tid = main_thread(roots, tid)

    def fold(trees: list[Any]) -> tuple[dict[str, float], float, int]:
        warnings: collections.Counter[str] = collections.Counter()
        tables = EventTables(warnings)
        engine = Attributor(tables, warnings, host_timeline=False)
        t0 = time.perf_counter()
        n = TorchEvents(tables, lambda ptr: None).add(trees, shapes=False, cuda=False)
        took = time.perf_counter() - t0
        engine.fold()
        engine.flush()
        prof = engine.build({})
        tables.close()
        col = prof.exclusive("time_ns")
        out: dict[str, float] = collections.defaultdict(float)
        for i in range(1, len(prof)):
            if col[i]:
                labels = [re.sub(r"[^ >]*/([^/ >]+\.py)", r"\1", f.label()) for f in prof.path(i)]
                # (the frames that ran when the window opened, above the step: the collector's chain at the open
                # gives them, which this prototype does not read)
                at = next((j for j, label in enumerate(labels) if label.endswith(step_label)), 0)
                out[" > ".join(labels[at:])] += float(col[i])
        return out, took, n

    step_label = f":{step.__code__.co_firstlineno} {step.__code__.co_name}"
    tracer, took_a, n_a = fold(roots)
    tree = frames_tree(mon.events, modules, end)
    main_ops = _without_python([r for r in roots if r.start_tid == main_tid])
    _place(tree, main_ops)
    stack = [tree]
    while stack:
        node = stack.pop()
        node.start_tid = main_tid
        stack.extend(k for k in node.kids if isinstance(k, _Node))
    others = _without_python([r for r in roots if r.start_tid != main_tid])

    lines, took_b, n_b = fold([*tree.kids, *others])
    total = sum(tracer.values())
    same = sum(min(v, lines.get(k, 0.0)) for k, v in tracer.items())
    print(
        f"folded by kernelscope: op time on the same path from the tracer's events and from the LINE events: "
        f"{100 * same / max(total, 1):.1f}% of {total / 1e6:.1f} ms; TorchEvents.add {took_a:.3f} s for {n_a:,} "
        f"events against {took_b:.3f} s for {n_b:,}"
    )
    diff = sorted(((v - lines.get(k, 0.0), k) for k, v in tracer.items()), reverse=True)[:4]
    for d, k in diff:
        if d > 0.005 * total:
            print(f"  tracer only {d / 1e6:7.2f} ms  {k}")
    diff = sorted(((v - tracer.get(k, 0.0), k) for k, v in lines.items()), reverse=True)[:4]
    for d, k in diff:
        if d > 0.005 * total:
            print(f"  lines only  {d / 1e6:7.2f} ms  {k}")


if __name__ == "__main__":
    main()
