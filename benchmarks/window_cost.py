"""What one recorded window of nanoGPT steps costs on torch's side and in kernelscope's fold, side by side in one
process: torch's profiler with stacks (what kernelscope's windows record), with stacks and shapes (its shape
sample), and without stacks (no Python tracer); for each, the steps' time, torch's stop, the events, the fold
(``TorchEvents.add``, the engine left out) and the floor of any fold written in Python: a walk of torch's event
tree reading only the fields ``add`` reads.

    python benchmarks/window_cost.py [--steps 10] [--repeats 2]
"""

from __future__ import annotations

import argparse
import collections
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

CONFIGS = {
    "stacks": {"with_stack": True, "record_shapes": False},
    "stacks+shapes": {"with_stack": True, "record_shapes": True},
    "no stacks": {"with_stack": False, "record_shapes": False},
}


def floor_walk(roots: Any) -> int:
    """Reads what ``TorchEvents.add`` reads of each event, and nothing else."""
    stack, n = list(roots), 0
    while stack:
        ev = stack.pop()
        n += 1
        ex = ev.extra_fields
        kind = type(ex).__name__
        children = ev.children
        if kind.endswith("PyCall") or kind.endswith("PyCCall"):
            ex.caller.file_name  # noqa: B018
            if kind.endswith("PyCall"):
                ex.module  # noqa: B018
        elif kind.endswith("TorchOp"):
            ev.name, ev.start_time_ns, ev.duration_time_ns, ev.start_tid, ex.scope.value, ex.sequence_number  # noqa: B018
        if children:
            stack.extend(children)
    return n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--repeats", type=int, default=2)
    args = ap.parse_args()

    import torch
    import train_nanogpt as code
    from torch.autograd.profiler import _disable_profiler, profile

    from kernelscope.attribute.tables import EventTables
    from kernelscope.collect.torch_events import TorchEvents

    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = code.NanoGPT()
    opt = torch.optim.AdamW(model.parameters(), lr=6e-4)
    corpus = torch.randint(0, 256, (200_000,))
    for _ in range(3):
        code.train_step(model, opt, corpus)
    rows: dict[str, list[dict[str, float]]] = collections.defaultdict(list)
    for _ in range(args.repeats):
        for name, config in CONFIGS.items():
            p = profile(use_kineto=True, **config)
            p.__enter__()  # type: ignore[no-untyped-call]
            t0 = time.perf_counter()
            for _ in range(args.steps):
                code.train_step(model, opt, corpus)
            t1 = time.perf_counter()
            results = _disable_profiler()
            p.enabled = False
            t2 = time.perf_counter()
            roots = results.experimental_event_tree()
            t3 = time.perf_counter()
            events = floor_walk(roots)
            t4 = time.perf_counter()
            conv = TorchEvents(EventTables(collections.Counter()), lambda ptr: None)
            conv.add(roots, shapes=config["record_shapes"], cuda=False)
            t5 = time.perf_counter()
            rows[name].append({"steps": t1 - t0, "stop": t2 - t1, "events": events, "floor": t4 - t3, "fold": t5 - t4})
            del roots, results, conv
    print(f"nanoGPT, {args.steps}-step windows, median of {args.repeats} (seconds a window; µs an event)")
    print(
        f"{'window':<15} {'steps':>7} {'stop':>7} {'events':>8} {'floor':>7} {'fold':>7} {'floor/ev':>9} {'fold/ev':>8}"
    )
    for name, rs in rows.items():
        m = {k: statistics.median(r[k] for r in rs) for k in rs[0]}
        ev = max(m["events"], 1)
        print(
            f"{name:<15} {m['steps']:>7.3f} {m['stop']:>7.3f} {int(m['events']):>8,} {m['floor']:>7.3f} "
            f"{m['fold']:>7.3f} {m['floor'] / ev * 1e6:>9.2f} {m['fold'] / ev * 1e6:>8.2f}"
        )


if __name__ == "__main__":
    main()
