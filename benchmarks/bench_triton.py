"""Triton interpreter time: plain vs launch metrics only vs the full memory inspector.

    python benchmarks/bench_triton.py [--repeats 3]

Runs the kernels of examples/triton_kernels.py at larger sizes on the Triton interpreter (CPU), each
mode round-robin in this process, and prints the median CPU time of the process per workload (data set-up
included) and the ratio to plain.
"""

from __future__ import annotations

import argparse
import os
import runpy
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

os.environ["TRITON_INTERPRET"] = "1"

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from kernelscope.collect.triton.intercept import Inspector  # noqa: E402
from kernelscope.collect.triton.launches import LaunchRecorder  # noqa: E402

DEMOS = runpy.run_path(str(ROOT / "examples" / "triton_kernels.py"), run_name="bench")["DEMOS"]
WORKLOADS: dict[str, Callable[[], object]] = {
    "add n=1M (1024 programs x 1024 lanes)": lambda: DEMOS["add"](n=1 << 20, block=1024),
    "rows 512x1000 (128 programs, 4x1024 blocks)": lambda: DEMOS["rows"](r=512, c=1000),
    "matmul 128x128x128 (64 programs, 4 k-steps)": lambda: DEMOS["matmul"](m=128, n=128, k=128),
}


def timed(fn: Callable[[], object], mode: str) -> tuple[float, int]:
    recorder: Inspector | LaunchRecorder | None = None
    if mode == "launch metrics":
        recorder = LaunchRecorder()
    elif mode == "inspector":
        recorder = Inspector()
    if recorder is not None:
        recorder.install()
    t0 = time.process_time()  # CPU time: the machine is shared, wall time is noisy
    try:
        fn()
    finally:
        seconds = time.process_time() - t0
        if recorder is not None:
            recorder.remove()
    accesses = len(recorder.accesses) if isinstance(recorder, Inspector) else 0
    return seconds, accesses


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    modes = ("plain", "launch metrics", "inspector")
    for name, fn in WORKLOADS.items():
        fn()  # warm-up: the interpreter rewrites each kernel's AST once
        times: dict[str, list[float]] = {m: [] for m in modes}
        accesses = 0
        for _ in range(args.repeats):
            for mode in modes:
                seconds, n = timed(fn, mode)
                times[mode].append(seconds)
                accesses = max(accesses, n)
        plain = statistics.median(times["plain"])
        print(f"{name}: {accesses} recorded memory ops")
        for mode in modes:
            med = statistics.median(times[mode])
            print(f"  {mode:15s} {med * 1e3:9.1f} ms CPU  {med / plain:5.2f}x")


if __name__ == "__main__":
    main()
