"""Item 4's lever, measured before it is built: the issuing line and the module path of every op captured by the
program's own Python hooks, with torch's profiler recording no stacks, against torch's Python tracer (stacks: what
kernelscope's windows record today). One process, windows of ``--steps`` nanoGPT steps (or, ``--model gpt2``, a
``transformers`` GPT-2 from a config), round-robin (CPU time; medians over every step and every stop):

- ``plain``: the steps alone;
- ``stacks``: torch's profiler with stacks (its Python tracer records every Python call);
- ``no stacks``: torch's profiler without stacks (torch's floor: ops only);
- ``no stacks + mode``: the same, with a ``TorchFunctionMode`` that passes every call through (what a mode
  costs by itself);
- ``no stacks + hooks``: the same, with a ``TorchFunctionMode`` that stores, for every torch call made from
  Python (operators included), its start and end (``time.time_ns``: the clock of torch's event times) and the
  innermost frame of a file outside torch (its code and line), and global module hooks that store each module
  call's start and end.

For each: the steps' time (as a multiple of ``plain``'s), torch's stop, the window's events, and for the hooks
the share of the window's top-level ops on the main thread (backward's run by autograd's thread are placed by
their forward op, as today) whose start lies inside a stored call: the ops the hooks can place on a line without
the tracer. The join by time is what a fold would do with them; it is checked here, not built.

    python benchmarks/line_capture.py [--steps 10] [--repeats 3] [--model nanogpt|gpt2]
"""

from __future__ import annotations

import argparse
import bisect
import collections
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))


def _model(name: str) -> tuple[Any, Any]:
    """(one training step, nothing) for the model named."""
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

        return step, model
    import train_nanogpt as code

    model = code.NanoGPT()
    opt = torch.optim.AdamW(model.parameters(), lr=6e-4)
    corpus = torch.randint(0, 256, (200_000,))
    return (lambda: code.train_step(model, opt, corpus)), model


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

    from torch.autograd.profiler import _disable_profiler, profile

    step, _ = _model(args.model)
    for _ in range(3):
        step()
    tid = threading.get_native_id()
    rows: dict[str, list[dict[str, float]]] = collections.defaultdict(list)
    per_step: dict[str, list[float]] = collections.defaultdict(list)
    configs = ("plain", "stacks", "no stacks", "no stacks + mode", "no stacks + hooks")
    for _ in range(args.repeats):
        for name in configs:
            cap = Capture(store=name.endswith("hooks")) if "+" in name else None
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
                if cap is not None and cap.store:
                    tids = collections.Counter(ev.start_tid for ev in roots)
                    main_tid = tid if tid in tids else tids.most_common(1)[0][0]
                    row["placed"] = placed(top_ops(roots, main_tid), cap.calls)
                    row["calls"] = len(cap.calls) / args.steps
                    row["module_calls"] = len(cap.modules) / 2 / args.steps
                del roots, results
            rows[name].append(row)
    plain = statistics.median(per_step["plain"])
    print(
        f"{args.model}, {args.steps}-step windows x {args.repeats}; a step's CPU ms (median of every step), torch's "
        "stop (median), x = to plain's step"
    )
    print(f"{'window':<19} {'step ms':>8} {'x':>6} {'stop s':>7} {'added x':>8} {'events':>8} {'ops placed':>10}")
    for name, rs in rows.items():
        m = {k: statistics.median(r[k] for r in rs) for k in rs[0]}
        one = statistics.median(per_step[name])
        added = (one - plain + m["stop"] / args.steps) / plain
        share = "" if m["placed"] != m["placed"] else f"{100 * m['placed']:.1f}%"
        print(
            f"{name:<19} {one * 1e3:>8.1f} {one / plain:>5.2f}x {m['stop']:>7.3f} {added:>7.2f}x "
            f"{int(m['events']):>8,} {share:>10}"
        )
    h = rows["no stacks + hooks"]
    print(
        f"hooks: {statistics.median(r['calls'] for r in h):.0f} torch calls and "
        f"{statistics.median(r['module_calls'] for r in h):.0f} module calls a step stored"
    )
    print("'added x': what recording adds to a step (its time over plain's, and its share of torch's stop), per plain step")


if __name__ == "__main__":
    main()
