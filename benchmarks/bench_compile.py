"""What torch.compile provenance capture costs: compile time and steady-step time, vs plain torch.compile.

Each measurement runs in a fresh subprocess (Dynamo/Inductor state is per process), alternating
plain and captured runs, with Inductor's on-disk caches in a private folder:

- cold: an empty cache folder for every run (C++ kernels built from scratch);
- warm: the folder filled by an earlier run of the same mode (plain: FX-graph and AOTAutograd cache
  hits; captured: those caches are disabled by the capture, so Inductor regenerates code but the
  C++ build cache hits).

    python benchmarks/bench_compile.py [--repeats 3] [--steps 50]

Prints a Markdown table; copy it into benchmarks/README-compile.md.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap

CHILD = textwrap.dedent(
    """
    import json, sys, time
    import torch
    from torch import nn

    capture = sys.argv[1] == "capture"
    steps = int(sys.argv[2])
    torch.manual_seed(0)
    torch.set_num_threads(4)

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.norm = nn.LayerNorm(64)
            self.fc1 = nn.Linear(64, 256)
            self.fc2 = nn.Linear(256, 64)
        def forward(self, x):
            return x + self.fc2(nn.functional.gelu(self.fc1(self.norm(x))) * 0.5)

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.blocks = nn.ModuleList(Block() for _ in range(2))
            self.head = nn.Linear(64, 10)
        def forward(self, x):
            x = self.blocks[0](x)
            if not torch.isfinite(x).all():  # graph break
                raise FloatingPointError
            return self.head(self.blocks[1](x))

    cap = None
    if capture:
        from kernelscope.collect.compile import CompileCapture
        cap = CompileCapture().__enter__()
    model = MLP()
    compiled = torch.compile(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(128, 64), torch.randint(0, 10, (128,))

    def step():
        loss = nn.functional.cross_entropy(compiled(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    t0 = time.perf_counter()
    step()  # compiles forward and backward of both graphs
    first = time.perf_counter() - t0
    for _ in range(5):
        step()
    times = []
    for _ in range(steps):
        t = time.perf_counter()
        step()
        times.append(time.perf_counter() - t)
    times.sort()
    out = {"first_step_s": first, "step_ms": 1000 * times[len(times) // 2]}
    if cap is not None:
        cap.__exit__(None, None, None)
        out["graphs"] = len(cap.graphs)
    print(json.dumps(out))
    """
)


def run_child(mode: str, steps: int, cache_dir: str) -> dict[str, float]:
    env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=cache_dir)
    done = subprocess.run(
        [sys.executable, "-c", CHILD, mode, str(steps)],
        capture_output=True,
        text=True,
        env=env,
        check=True,
        timeout=900,
    )
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--steps", type=int, default=50)
    args = parser.parse_args()
    results: dict[tuple[str, str], list[dict[str, float]]] = {}
    with tempfile.TemporaryDirectory(prefix="ks-bench-compile-") as root:
        warm_dirs = {mode: os.path.join(root, f"warm-{mode}") for mode in ("plain", "capture")}
        for mode in ("plain", "capture"):
            run_child(mode, 5, warm_dirs[mode])  # fill the warm caches
        for i in range(args.repeats):
            for mode in ("plain", "capture"):
                cold = os.path.join(root, f"cold-{mode}-{i}")
                results.setdefault((mode, "cold"), []).append(run_child(mode, args.steps, cold))
                results.setdefault((mode, "warm"), []).append(run_child(mode, args.steps, warm_dirs[mode]))
    print("| caches | mode | first step (compile) s | steady step ms (median of medians) |")
    print("|---|---|---|---|")
    for cache in ("cold", "warm"):
        for mode in ("plain", "capture"):
            rows = results[(mode, cache)]
            first = statistics.median(r["first_step_s"] for r in rows)
            step = statistics.median(r["step_ms"] for r in rows)
            label = "torch.compile" if mode == "plain" else "torch.compile + CompileCapture"
            print(f"| {cache} | {label} | {first:.2f} | {step:.3f} |")
    for cache in ("cold", "warm"):
        p = results[("plain", cache)]
        c = results[("capture", cache)]
        dfirst = statistics.median(r["first_step_s"] for r in c) - statistics.median(r["first_step_s"] for r in p)
        ratio = statistics.median(r["step_ms"] for r in c) / statistics.median(r["step_ms"] for r in p)
        print(f"\n{cache}: capture adds {dfirst:+.2f} s to the compiling step; steady step ratio {ratio:.3f}x")


if __name__ == "__main__":
    main()
