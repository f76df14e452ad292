"""What recording one step costs, and where (issue 24, item 4): one process per mode, in-process timers.

    python benchmarks/step_cost.py [--steps 20] [--modes plain,torch_stack,ks0] [--model nanogpt|gpt2]

Modes: ``plain`` (no profiler), ``torch_stack`` (``torch.profiler`` with stacks, modules and shapes around the
loop, then ``key_averages()`` as a user would read it), ``ks0`` (a kernelscope session that records every
step, ``max_overhead=0``; its windows fold in the background, ``ks0_inline``: in the program's process),
``torch_windows`` (torch's floor for such windows: its profiler with stacks, no shapes, stopped and freed every
``WINDOW_STEPS`` steps in the program's process, nothing folded; ``torch_windows_nostack``: without stacks). The
workload is ``train_nanogpt.py``'s model and loop, or (``--model gpt2``) ``train_hf.py``'s GPT-2 built from a
config, trained with AdamW on random tokens. Each mode prints the loop's median step, the post-processing after the loop, and for ``ks0`` where the recording's own time went: torch's
stop, reading torch's event tree, the engine's fold. Ratios are to ``plain`` in the same run.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import statistics
import subprocess
import sys
import time
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))


MODEL = os.environ.get("STEP_COST_MODEL", "nanogpt")
# the torch_windows modes turn torch's profiler over every this many steps (~1 s of nanoGPT: kernelscope's windows),
# from the end of the first step
WINDOW_STEPS = 17


def _workload(steps: int, on_step: Any = None) -> list[float]:
    import torch

    sys.path.insert(0, HERE)
    torch.set_num_threads(1)
    torch.manual_seed(0)
    if MODEL == "gpt2":
        from train_hf import build

        model, vocab = build("gpt2")
        model.train()
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4)

        def one_step() -> None:
            ids = torch.randint(0, vocab, (8, 64))
            out = model(input_ids=ids, labels=ids)
            opt.zero_grad(set_to_none=True)
            out.loss.backward()
            opt.step()
    else:
        from train_nanogpt import NanoGPT, train_step

        corpus = torch.randint(0, 256, (200_000,))
        model = NanoGPT()
        opt = torch.optim.AdamW(model.parameters(), lr=6e-4, weight_decay=0.1)

        def one_step() -> None:
            train_step(model, opt, corpus)

    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        one_step()
        if on_step is not None:
            on_step()
        times.append(time.perf_counter() - t0)
    return times


def _timed(spent: dict[str, float], name: str, fn: Any) -> Any:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            spent[name] = spent.get(name, 0.0) + time.perf_counter() - t0

    return wrapper


def worker(mode: str, steps: int) -> dict[str, Any]:
    out: dict[str, Any] = {"mode": mode}
    t_all = time.perf_counter()
    if mode == "plain":
        times = _workload(steps)
    elif mode == "torch_stack":
        from torch.profiler import profile

        prof = profile(with_stack=True, with_modules=True, record_shapes=True)
        prof.__enter__()
        times = _workload(steps)
        t0 = time.perf_counter()
        prof.__exit__(None, None, None)
        out["stop"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        try:
            prof.key_averages(group_by_stack_n=5)
            out["post"] = time.perf_counter() - t0
        except UnicodeDecodeError as exc:  # (torch 2.13 on the GPT-2 model: a corrupt event name)
            out["post_failed"] = f"{type(exc).__name__} after {time.perf_counter() - t0:.2f} s"
    elif mode in ("torch_windows", "torch_windows_nostack"):
        # torch's own floor for what kernelscope's windows record after the shape sample: torch.autograd's
        # profiler with stacks (``_nostack``: without), no shapes, stopped and its results freed every
        # ``WINDOW_STEPS`` steps in the program's process, nothing read from them
        from torch.autograd.profiler import profile as autograd_profile

        stack = mode == "torch_windows"
        torch_spent = {"window_stop": 0.0, "window_free": 0.0}  # (inside the loop's steps)
        state: dict[str, Any] = {"n": 0, "prof": None}

        def begin() -> None:
            prof = autograd_profile(use_kineto=True, with_stack=stack)
            prof.__enter__()  # type: ignore[no-untyped-call]
            state["prof"] = prof

        def end() -> None:
            prof = state["prof"]
            t0 = time.perf_counter()
            prof.__exit__(None, None, None)
            t1 = time.perf_counter()
            prof.kineto_results = None
            del prof
            state["prof"] = None
            torch_spent["window_stop"] += t1 - t0
            torch_spent["window_free"] += time.perf_counter() - t1

        def on_step() -> None:
            state["n"] += 1
            if state["n"] == 1:  # (from the first step's end: the set-up before it is no step's)
                begin()
            elif state["n"] % WINDOW_STEPS == 1:
                end()
                begin()

        times = _workload(steps, on_step)
        t0 = time.perf_counter()
        if state["prof"] is not None:
            end()
        out["finalize"] = time.perf_counter() - t0
        out.update(torch_spent)
    else:
        from kernelscope.attribute import engine
        from kernelscope.collect import recorder, torch_events
        from kernelscope.collect.torch_live import Session

        spent: dict[str, float] = {}
        recorder.stop_profiler = _timed(spent, "torch_stop", recorder.stop_profiler)
        torch_events.TorchEvents.add = _timed(spent, "read_tree", torch_events.TorchEvents.add)  # type: ignore[method-assign]
        engine.Attributor.fold = _timed(spent, "engine", engine.Attributor.fold)  # type: ignore[method-assign]
        engine.Attributor.flush = _timed(spent, "engine", engine.Attributor.flush)  # type: ignore[method-assign]
        recorder.Recorder.stop = _timed(spent, "stop_and_fold", recorder.Recorder.stop)  # type: ignore[method-assign]
        recorder.Recorder.start = _timed(spent, "open", recorder.Recorder.start)  # type: ignore[method-assign]
        s = Session(compile_capture=False, max_overhead=0, fold="inline" if mode == "ks0_inline" else "background")
        s.start()
        times = _workload(steps)
        t0 = time.perf_counter()
        s.finalize()
        out["finalize"] = time.perf_counter() - t0
        out.update(spent)
        out["events"] = s.recorder.events
        out["windows"] = s.recorder.windows
        out["whole_steps"] = s.log.whole_count
        bg = s.recorder.background
        if bg is not None:
            out["background_windows"] = bg.windows
            out["background_cpu"] = bg.cpu
            out["background_waited"] = bg.waited
    out["total"] = time.perf_counter() - t_all
    out["step_median"] = statistics.median(times[2:])
    out["loop"] = sum(times)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--modes", default="plain,torch_stack,ks0")
    ap.add_argument("--worker")
    ap.add_argument("--model", choices=("nanogpt", "gpt2"), default=MODEL)
    args = ap.parse_args()
    os.environ["STEP_COST_MODEL"] = args.model  # (the workers read it)
    if args.worker:
        print(json.dumps(worker(args.worker, args.steps)))
        return
    rows = {}
    for mode in args.modes.split(","):
        res = subprocess.run(
            [sys.executable, __file__, "--worker", mode, "--steps", str(args.steps)],
            capture_output=True,
            text=True,
            check=True,
        )
        rows[mode] = json.loads(res.stdout.strip().splitlines()[-1])
    base = rows["plain"]["step_median"] if "plain" in rows else None
    for mode, r in rows.items():
        ratio = f" ({r['step_median'] / base:.2f}x)" if base else ""
        extra = {k: round(v, 3) if isinstance(v, float) else v for k, v in r.items() if k not in ("mode",)}
        print(f"{mode:12s} step {r['step_median'] * 1e3:7.1f} ms{ratio}  {extra}")
    if base:
        # what recording added to the program's path, per step: the loop's excess over plain's (window changes
        # included), then with what ran after the loop (torch's stop, kernelscope's last window)
        plain_loop = rows["plain"]["loop"]
        for mode, r in rows.items():
            if mode == "plain":
                continue
            loop = (r["loop"] - plain_loop) / args.steps
            whole = (r["loop"] + r.get("finalize", 0.0) + r.get("stop", 0.0) - plain_loop) / args.steps
            print(
                f"{mode:12s} added a step: {loop * 1e3:.1f} ms ({loop / base:.2f}x) in the loop, "
                f"{whole * 1e3:.1f} ms ({whole / base:.2f}x) with what ran after it"
            )


if __name__ == "__main__":
    main()
