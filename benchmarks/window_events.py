"""What a recorded window holds, and how much of it is kernelscope's own (issue 24, item 4).

    python benchmarks/window_events.py [--steps 30] [--model nanogpt|gpt2] [--skip-windows 3]

Inside a window torch's Python tracer records every Python call, kernelscope's hooks included, and torch's stop pays
for each event again. This runs ``step_cost.py``'s workload under a session that records every step (folded inline),
walks each window's event tree before the fold, and prints the Python events and ops of the windows after the first
``--skip-windows`` (the set-up and the shape sample), kernelscope's share of the Python events, and which of its
functions they come from (a call of one and everything under it, ops left out), with the events each call makes.
Counts, not times: they do not move with the machine's load.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections import Counter
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
_OWN = os.sep + "kernelscope" + os.sep  # (torch names a file as Python imported it: relative or not)


def _count(results: Any, totals: Counter[str], roots: Counter[str], events: Counter[str]) -> None:
    stack = list(results.experimental_event_tree())
    while stack:
        ev = stack.pop()
        tag = ev.tag.name
        if tag == "PyCall" and _OWN in os.sep + ev.extra_fields.callsite.file_name:
            name = ev.extra_fields.callsite.function_name
            roots[name] += 1
            events[name] += _walk(ev, totals)  # (its call and what it calls: the program's ops under it stay ops)
            continue
        if tag == "TorchOp":
            totals["ops"] += 1
        elif tag == "PyCall" or tag == "PyCCall":
            totals["python"] += 1
        stack.extend(ev.children)


def _walk(root: Any, totals: Counter[str]) -> int:
    """Count ``root``'s tree into ``totals``; returns its Python events."""
    python = 0
    stack = [root]
    while stack:
        ev = stack.pop()
        stack.extend(ev.children)
        tag = ev.tag.name
        if tag == "TorchOp":
            totals["ops"] += 1
        elif tag == "PyCall" or tag == "PyCCall":
            python += 1
    totals["python"] += python
    return python


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--model", choices=("nanogpt", "gpt2"), default="nanogpt")
    ap.add_argument("--skip-windows", type=int, default=3)
    args = ap.parse_args()
    os.environ["STEP_COST_MODEL"] = args.model
    sys.path.insert(0, HERE)
    import step_cost

    from kernelscope.collect import recorder
    from kernelscope.collect.torch_live import Session

    step_cost.MODEL = args.model
    totals: Counter[str] = Counter()
    roots: Counter[str] = Counter()
    events: Counter[str] = Counter()
    fold = recorder.Recorder._fold

    def counting(self: Any, results: Any, **kwargs: Any) -> int:
        if self.windows > args.skip_windows:
            totals["windows"] += 1
            _count(results, totals, roots, events)
        return fold(self, results, **kwargs)

    recorder.Recorder._fold = counting  # type: ignore[method-assign]
    s = Session(compile_capture=False, max_overhead=0, fold="inline")
    s.start()
    step_cost._workload(args.steps)
    s.finalize()
    own = sum(events.values())
    python = max(totals["python"], 1)
    print(
        f"{args.model}: {totals['windows']} windows counted: {totals['python']:,} Python events, "
        f"{totals['ops']:,} ops ({totals['python'] / max(totals['ops'], 1):.2f} Python events an op); "
        f"kernelscope's own {own:,} ({own / python:.0%} of the Python events)"
    )
    for name, n in events.most_common(12):
        print(f"  {name:24s} {roots[name]:7,} calls {n:8,} events ({n / roots[name]:.1f} a call)")


if __name__ == "__main__":
    main()
