"""Peak RSS of a long live run does not grow with its length (folding as it goes).

    python benchmarks/bench_live_memory.py [--steps 300,1200]

An 8-layer MLP trained in one process under ``kernelscope.profile()`` (default folding); peak RSS
(``ru_maxrss``) is read after each step count. Flat means the tree, not the events, is held.
"""

from __future__ import annotations

import argparse
import resource
import time

import torch

import kernelscope


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", default="300,1200", help="cumulative step counts to report at")
    args = ap.parse_args()
    marks = [int(s) for s in args.steps.split(",")]
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = torch.nn.Sequential(*[torch.nn.Linear(64, 64) for _ in range(8)])
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    done = 0
    t0 = time.perf_counter()
    with kernelscope.profile(compile_capture=False) as p:  # default folding: every 1 s or 200k torch calls
        for mark in marks:
            while done < mark:
                loss = model(torch.randn(16, 64)).sum()
                loss.backward()
                opt.step()
                opt.zero_grad()
                kernelscope.step()
                done += 1
            print(f"after {done} steps: peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")
    assert p.result is not None
    md = p.result.metadata
    print(f"windows {md['windows']}, folding {md['fold_seconds']:.1f} s of {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
