"""Cost of folding a live run's events into the tree, per event: the engine path of the live collector.

Trains ``train_nanogpt.py``'s model for N steps inside a ``Session`` that records every window (no overhead
budget) and prints the fold time per event (torch's event-tree walk, the records, the engine's sweep and
the per-window collection; torch's own ``profile.__exit__`` is not in it) with the profile's totals, so
that two source trees can be compared side by side on the same machine:

    python benchmarks/bench_fold.py --steps 30 --repeats 2
    python benchmarks/bench_fold.py --steps 30 --repeats 2 --src /tmp/old/src   # another checkout, A/B

Each repeat runs in a fresh process; with ``--src`` the two trees alternate.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent


def child(steps: int) -> None:
    sys.path.insert(0, str(HERE))
    import torch
    import train_nanogpt as model_code

    import kernelscope
    from kernelscope.collect.torch_live import Session

    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = model_code.NanoGPT()
    opt = torch.optim.AdamW(model.parameters(), lr=6e-4)
    corpus = torch.randint(0, 256, (200_000,))

    def step() -> None:
        model_code.train_step(model, opt, corpus)

    for _ in range(3):
        step()
    try:  # allocations in every window, as a checkout from before allocation sampling records them
        session = Session(record_from="start", max_overhead=0.0, memory="all")
    except TypeError:  # a checkout from before the overhead budget: it records everything anyway
        session = Session(record_from="start")
    session.start()
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
        session.step()
    profile = session.finalize()
    wall = time.perf_counter() - t0
    m = profile.metadata
    out = {
        "src": str(Path(kernelscope.__file__).parents[1]),
        "wall_s": wall,
        "fold_s": m["fold_seconds"],
        "events": m["events"],
        "us_per_event": m["fold_seconds"] / max(m["events"], 1) * 1e6,
        "nodes": len(profile),
        "flops": profile.total("flops"),
        "bytes": profile.total("bytes"),
    }
    print(json.dumps(out))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--src", help="another checkout's src/ to compare against")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.steps)
        return
    trees = [str(REPO / "src")] + ([args.src] if args.src else [])
    print(f"{'source':<40} {'us/event':>9} {'fold s':>7} {'events':>9} {'nodes':>6} {'GFLOP':>8} {'GB':>6}")
    for _ in range(args.repeats):
        for src in trees:
            env = {**os.environ, "PYTHONPATH": src}
            cmd = [sys.executable, __file__, "--child", "--steps", str(args.steps)]
            r = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
            d = json.loads(r.stdout.strip().splitlines()[-1])
            print(
                f"{d['src'][-40:]:<40} {d['us_per_event']:>9.2f} {d['fold_s']:>7.2f} {d['events']:>9,} "
                f"{d['nodes']:>6} {d['flops'] / 1e9:>8.1f} {d['bytes'] / 1e9:>6.2f}"
            )


if __name__ == "__main__":
    main()
