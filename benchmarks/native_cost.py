"""What ``kernelscope run --native`` costs the program: its own timed loop under ``kernelscope run`` with and
without native sampling (py-spy, from outside), side by side, round robin, each in a fresh process.

The program (``--program mlp`` or ``tiny``) times a fixed number of iterations itself and reports the loop's
wall time and the process's CPU time over it (``time.process_time``). py-spy stops the process for every sample
(native stacks cannot be read without stopping it): that costs the program wall time, not CPU time, so both
are printed. On a shared, busy machine wall times are noisy; the CPU time says whether the program did more
work, the wall ratio what it waited. py-spy's start (it reads the symbols of every loaded library, seconds
with torch) happens before the program runs (in "whole process"). "py-spy ms/sample" is py-spy's own CPU time
per sampling instant while it sampled: on an idle machine, about how long each sample stops the program.

    python benchmarks/native_cost.py --program mlp --rates 10,20,50 --repeats 2 [--iterations 1500]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

PROGRAMS = {
    "mlp": """
import torch
from torch import nn
torch.manual_seed(0); torch.set_num_threads(1)
model = nn.Sequential(nn.Linear(512, 1024), nn.ReLU(), nn.Linear(1024, 512))
x = torch.randn(128, 512)
N = 150
""",
    "tiny": """
import torch
torch.manual_seed(0)
w = torch.randn(4, requires_grad=True); b = torch.randn(4, requires_grad=True); x = torch.randn(4)
N = 3000
def model(x):
    y = (x * w + b).tanh().sum()
    y.backward()
    w.grad = None; b.grad = None
    return y
""",
}

LOOP = """
import json, sys, time
with torch.no_grad() if "{name}" == "mlp" else torch.enable_grad():
    for _ in range(5):
        model(x)
    t0, c0 = time.perf_counter(), time.process_time()
    for _ in range(N):
        model(x)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
print("RESULT " + json.dumps({{"wall": wall, "cpu": cpu}}), file=sys.stderr)
"""


def run(script: str, mode: str) -> dict[str, float]:
    cmd = [sys.executable, "-m", "kernelscope", "run", "--no-view", "--max-overhead", "0", "-o", os.devnull + ".ksprof"]
    if mode != "off":
        cmd += ["--native", "--native-rate", mode]
    out = tempfile.mktemp(suffix=".ksprof")
    cmd[cmd.index(os.devnull + ".ksprof")] = out
    t0 = time.perf_counter()
    proc = subprocess.run([*cmd, script], capture_output=True, text=True, timeout=600)
    total = time.perf_counter() - t0
    sampler = float("nan")
    if os.path.exists(out):
        from kernelscope import load

        native = load(out).metadata.get("native") or {}
        sampler = float(native.get("sampler_ms_per_sample", float("nan")))
        os.unlink(out)
    line = next((ln for ln in proc.stderr.splitlines() if ln.startswith("RESULT ")), None)
    if line is None:
        raise SystemExit(f"{mode}: no result\n{proc.stderr[-2000:]}")
    res = json.loads(line[len("RESULT ") :])
    res["process"] = total
    res["sampler"] = sampler
    return res


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--program", choices=sorted(PROGRAMS), default="mlp")
    ap.add_argument("--rates", default="10,20,50")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--iterations", type=int, default=None, help="the loop's length (default: 150 mlp, 3000 tiny)")
    args = ap.parse_args()
    modes = ["off", *args.rates.split(",")]
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as fh:
        program = PROGRAMS[args.program]
        if args.iterations is not None:
            program += f"N = {args.iterations}\n"
        fh.write(program + LOOP.format(name=args.program))
        script = fh.name
    results: dict[str, list[dict[str, float]]] = {m: [] for m in modes}
    try:
        for _ in range(args.repeats):
            for m in modes:
                results[m].append(run(script, m))
    finally:
        os.unlink(script)
    base_wall = statistics.median(r["wall"] for r in results["off"])
    base_cpu = statistics.median(r["cpu"] for r in results["off"])
    print(f"program {args.program}: the loop's wall and CPU seconds, median of {args.repeats} (ratio to no native)")
    print(f"{'native rate':>12} {'loop wall':>16} {'loop CPU':>16} {'whole process':>14} {'py-spy ms/sample':>17}")
    for m in modes:
        wall = statistics.median(r["wall"] for r in results[m])
        cpu = statistics.median(r["cpu"] for r in results[m])
        proc = statistics.median(r["process"] for r in results[m])
        sampler = statistics.median(r["sampler"] for r in results[m])
        label = "off" if m == "off" else f"{m}/s"
        print(
            f"{label:>12} {wall:8.3f}s {wall / base_wall:5.2f}x {cpu:8.3f}s {cpu / base_cpu:5.2f}x {proc:12.1f}s"
            f" {sampler:17.2f}"
        )


if __name__ == "__main__":
    main()
