"""Stress: profile a program we did not write, with thousands of tiny ops per step, N times.

pytorch/examples' time_sequence_prediction (LSTMCell + LBFGS closure): bring its train.py and
generate_sine_wave.py into a folder (the data generated small: see --help), then

    python benchmarks/bench_stress.py FOLDER [--runs 10] [--steps 2]

Reports per run: exit code, whether the profile was saved and loads, total op time and windows.
Passes when no run crashed, every profile loads, and op-time totals are within 1.3x of each other.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from functools import partial

print = partial(print, flush=True)  # progress as it goes


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("folder", help="folder holding train.py and traindata.pt")
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--steps", type=int, default=2)
    args = ap.parse_args()
    from kernelscope import load

    totals: list[float] = []
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.runs):
            out = os.path.join(tmp, f"run{i}.ksprof")
            t0 = time.perf_counter()
            r = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "kernelscope",
                    "run",
                    "--no-view",
                    "-o",
                    out,
                    "train.py",
                    "--steps",
                    str(args.steps),
                ],
                cwd=args.folder,
                env={**os.environ, "OMP_NUM_THREADS": "1"},  # oversubscribed BLAS threads swamp any profile
                capture_output=True,
                text=True,
            )
            wall = time.perf_counter() - t0
            try:
                prof = load(out)
                total = prof.total("time_ns") / 1e9
                windows = prof.metadata.get("windows")
                # invented time shows as one op's calls taking far longer than that op's usual calls
                excl, calls = prof.exclusive("time_ns"), prof.exclusive("count")
                worst = max(range(1, len(prof)), key=lambda n: excl[n] / max(calls[n], 1.0))
                worst_text = f"{prof.frame_of(worst).name} {excl[worst] / max(calls[worst], 1.0) / 1e6:.2f} ms/call"
                deferred = prof.metadata.get("recording", {}).get("deferred_window_changes")
            except Exception as exc:  # a lost profile is what this benchmark looks for
                print(f"run {i}: exit {r.returncode}, profile NOT loadable ({exc}); stderr tail: {r.stderr[-300:]}")
                failures += 1
                continue
            ok = r.returncode == 0
            failures += not ok
            totals.append(total)
            print(
                f"run {i}: exit {r.returncode}, wall {wall:.1f} s, op time {total:.3f} s, windows {windows}, deferred {deferred}, slowest per call: {worst_text}"
            )
    if totals:
        spread = max(totals) / min(totals)
        print(f"op-time totals: min {min(totals):.3f} s, max {max(totals):.3f} s, spread {spread:.2f}x (goal <= 1.3x)")
    else:
        spread = float("inf")
    print(f"failures: {failures} of {args.runs}")
    return 0 if failures == 0 and spread <= 1.3 else 1


if __name__ == "__main__":
    sys.exit(main())
