"""Live profiling cost on the bundled example, side by side in one run.

    python benchmarks/bench_live.py [--steps 100] [--warmup 5]

Each mode runs in a fresh subprocess (same model, same seed, same steps):
  plain        no profiler
  kernelscope  kernelscope.profile() around the training loop (default options)
  torch        torch.profiler(with_stack=True, with_modules=True, record_shapes=True)
It reports the median steady-step time (warm-up steps excluded) and its ratio to plain;
post-processing time per 100k events (kernelscope's fold into the tree vs torch's own
prof.events() + key_averages()); and the size of kernelscope's profile vs the chrome trace
of the same run (prof.export_chrome_trace).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "examples"))


def _loop(steps: int, on_step=None) -> list[float]:  # type: ignore[no-untyped-def]
    import torch
    import torch.nn.functional as F
    from tiny_transformer import TinyGPT

    torch.manual_seed(0)
    vocab, ctx, batch = 512, 64, 8
    model = TinyGPT(vocab=vocab, ctx=ctx)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        idx = torch.randint(0, vocab, (batch, ctx))
        logits = model(idx)
        loss = F.cross_entropy(logits.view(-1, vocab), torch.roll(idx, -1, dims=1).view(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - t0)
        if on_step is not None:
            on_step()
    return times


def worker(mode: str, steps: int, out_dir: str) -> dict[str, object]:
    import torch

    torch.set_num_threads(1)
    gc.collect()
    result: dict[str, object] = {"mode": mode}
    if mode == "plain":
        result["step_s"] = _loop(steps)
    elif mode == "kernelscope":
        import kernelscope

        path = os.path.join(out_dir, "run.ksprof")
        with kernelscope.profile(path) as p:
            result["step_s"] = _loop(steps)
        md = p.result.metadata if p.result is not None else {}
        result["post_s"] = md.get("fold_seconds")
        result["events"] = md.get("events")
        result["size_bytes"] = os.path.getsize(path)
    elif mode == "torch":
        from torch.profiler import ProfilerActivity, profile

        with profile(activities=[ProfilerActivity.CPU], with_stack=True, with_modules=True, record_shapes=True) as prof:
            result["step_s"] = _loop(steps)
        t0 = time.perf_counter()
        events = prof.events()
        prof.key_averages()
        result["post_s"] = time.perf_counter() - t0
        result["events"] = len(events)
        trace = os.path.join(out_dir, "trace.json")
        prof.export_chrome_trace(trace)
        result["size_bytes"] = os.path.getsize(trace)
    return result


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--repeats", type=int, default=3, help="round-robin repeats of each mode (noise control)")
    ap.add_argument("--worker")
    ap.add_argument("--out")
    args = ap.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker, args.steps, args.out)))
        return
    rows = {}
    with tempfile.TemporaryDirectory() as tmp:
        for mode in ("plain", "kernelscope", "torch"):
            out = (
                subprocess.run(
                    [sys.executable, __file__, "--worker", mode, "--steps", str(args.steps), "--out", tmp],
                    capture_output=True,
                    text=True,
                    check=True,
                )
                .stdout.strip()
                .splitlines()[-1]
            )
            rows[mode] = json.loads(out)
    med = {m: statistics.median(r["step_s"][args.warmup :]) * 1e3 for m, r in rows.items()}
    print(
        f"example: examples/tiny_transformer.py, {args.steps} steps ({args.warmup} warm-up), 1 thread, "
        f"median of {args.repeats} round-robin runs"
    )
    print(f"{'mode':<12} {'median step ms':>15} {'ratio':>7}")
    for m in rows:
        print(f"{m:<12} {med[m]:>15.2f} {med[m] / med['plain']:>7.2f}x")
    ks, th = rows["kernelscope"], rows["torch"]
    ks_rate = ks["post_s"] / ks["events"] * 1e5
    th_rate = th["post_s"] / th["events"] * 1e5
    print(
        f"post-processing per 100k events: kernelscope {ks_rate:.3f} s ({ks['events']} events: ops and Python calls), "
        f"torch events()+key_averages() {th_rate:.3f} s ({th['events']} events: ops) -> {th_rate / ks_rate:.1f}x faster"
    )
    # the same workload under both: the whole run's post-processing, side by side
    print(
        f"post-processing of the whole run: kernelscope {ks['post_s']:.2f} s, torch {th['post_s']:.2f} s "
        f"-> {th['post_s'] / ks['post_s']:.1f}x faster"
    )
    print(
        f"size: kernelscope profile {ks['size_bytes'] / 1e3:.1f} kB, chrome trace {th['size_bytes'] / 1e6:.1f} MB "
        f"-> {th['size_bytes'] / ks['size_bytes']:.0f}x smaller"
    )


if __name__ == "__main__":
    main()
