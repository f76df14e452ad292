"""What a fork costs the program after it (collect/background.py, ``FAULT_SECONDS``): copy-on-write faults.

A window folded in a forked child shares the program's memory with it; every page the program writes afterwards
faults and is copied (once the child is gone the first write still faults). This times ``train_nanogpt.py``'s
step loop, ``--steps`` steps at a time, alone and just after a fork whose child sleeps through them, alternating,
and counts the process's minor faults in each (``resource.getrusage``): the extra time over the extra faults is
what one fault costs the program.

    python benchmarks/fork_cost.py [--batch 8] [--steps 6] [--repeats 4]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--repeats", type=int, default=4)
    args = ap.parse_args()

    import torch
    import train_nanogpt as tn

    torch.set_num_threads(1)
    torch.manual_seed(0)
    corpus = torch.randint(0, 256, (200_000,))
    model = tn.NanoGPT()
    opt = torch.optim.AdamW(model.parameters(), lr=6e-4, weight_decay=0.1)

    def faults() -> int:
        return resource.getrusage(resource.RUSAGE_SELF).ru_minflt

    def steps() -> tuple[float, int]:
        f0, t0 = faults(), time.perf_counter()
        for _ in range(args.steps):
            tn.train_step(model, opt, corpus, args.batch)
        return time.perf_counter() - t0, faults() - f0

    steps()  # (warm-up)
    alone: list[tuple[float, int]] = []
    forked: list[tuple[float, int]] = []
    for _ in range(args.repeats):
        alone.append(steps())
        pid = os.fork()
        if pid == 0:  # the child holds the pages while the program runs on
            time.sleep(60)
            os._exit(0)
        forked.append(steps())
        os.kill(pid, 9)
        os.waitpid(pid, 0)
    a_t, a_f = statistics.median(t for t, _ in alone), statistics.median(f for _, f in alone)
    f_t, f_f = statistics.median(t for t, _ in forked), statistics.median(f for _, f in forked)
    extra_t, extra_f = f_t - a_t, f_f - a_f
    print(f"nanoGPT batch {args.batch}, {args.steps} steps (median of {args.repeats}):")
    print(f"  alone        {a_t * 1e3:8.1f} ms  {a_f:8.0f} minor faults")
    print(f"  after a fork {f_t * 1e3:8.1f} ms  {f_f:8.0f} minor faults")
    per = extra_t / extra_f if extra_f > 0 else float("nan")
    print(f"  the fork: +{extra_t * 1e3:.1f} ms, +{extra_f:.0f} faults: {per * 1e6:.2f} us a fault")


if __name__ == "__main__":
    main()
