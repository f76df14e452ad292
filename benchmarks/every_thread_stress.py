"""Does torch survive kernelscope recording every thread? Worker threads run ops without pause while the main
thread's real kernelscope session (``kernelscope.start``, ``--max-overhead 0``, windows folded every
``--fold-seconds``) opens, stops and folds hundreds of windows. Each run is a subprocess, so a crash in torch
(a segfault, an abort) is counted, not fatal.

    python benchmarks/every_thread_stress.py --runs 10 [--windows 300] [--threads 2] [--mode forced|auto]

``--mode forced`` records every thread whatever the installed torch (the gate in collect/threads.py set
aside: the measurement behind it); ``auto`` is what kernelscope does on this torch. Prints one JSON line per run
and a summary line: runs, clean, crashed (by signal), failed (an exit code, a timeout, or a session that
stopped recording: its profile's warning is printed), window changes in all. Exit code 0 only when every run
was clean. ``--one OUT.json`` runs one session in this process (what each subprocess does).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve()
STALL_SECONDS = 60.0


def worker(stop: threading.Event, ready: threading.Barrier, seed: int) -> None:
    """A worker in the style of an inference thread (even ``seed``: ``no_grad``, a ``record_function`` range
    around each batch, a RecordFunction that spans many ops) or of a trainer on its own thread (odd: forward,
    backward, optimizer step)."""
    import torch
    from torch import nn

    torch.manual_seed(seed)
    model = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 16))
    x = torch.randn(16, 64)
    ready.wait()
    if seed % 2 == 0:
        with torch.no_grad():
            while not stop.is_set():
                with torch.autograd.profiler.record_function("batch"):
                    y = model(x)
                    z = (y @ y.T).softmax(-1)
                    x = (x + z.sum() * 1e-6).clamp(-3, 3)
        return
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    while not stop.is_set():
        opt.zero_grad()
        model(x).square().mean().backward()
        opt.step()


def one(out: Path, windows: int, threads: int, fold_seconds: float, forced: bool) -> None:
    import torch
    from torch import nn

    import kernelscope
    from kernelscope.collect import threads as every

    if forced:  # the mode wherever torch has it, and no stop for the tracer (the measurements behind the gates)
        every.EVERY_THREAD_SINCE = (0, 0)
        every.TRACER_WITH_THREADS_SINCE = (0, 0)
    mode = every.every_thread()
    stop = threading.Event()
    ready = threading.Barrier(threads + 1)
    pool = [threading.Thread(target=worker, args=(stop, ready, k), name=f"worker-{k}") for k in range(threads)]
    for t in pool:
        t.start()
    ready.wait()
    model = nn.Linear(32, 32)
    x = torch.randn(8, 32)
    t0 = time.perf_counter()
    session = kernelscope.start(max_overhead=0, fold_seconds=fold_seconds, memory="off")
    last, changed = session.windows, time.perf_counter()
    try:
        # module calls: the session's checkpoints, where windows turn over; a session that stops changing
        # windows (kernelscope stopped recording after an error) ends the run after STALL_SECONDS
        while session.windows < windows and time.perf_counter() - changed < STALL_SECONDS:
            model(x).relu().sum()
            if not session.recorder.open and session.recorder.threads.unsafe():
                break  # recording stopped for the program's threads on this torch (threads.py): by design
            if session.windows != last:
                last, changed = session.windows, time.perf_counter()
    finally:
        stop.set()
        for t in pool:
            t.join()
    profile = kernelscope.finalize()
    seconds = time.perf_counter() - t0
    # the worker's ops, under its own function (threads other than the main one)
    worker_ops = 0
    col = profile.exclusive("count")
    for n in range(1, len(profile)):
        if profile.frame_of(n).name.startswith("aten::") and any(f.name == "worker" for f in profile.path(n)):
            worker_ops += int(col[n])
    result = {
        "torch": torch.__version__,
        "every_thread": mode.enabled,
        "windows": session.windows,
        "seconds": round(seconds, 2),
        "worker_ops": worker_ops,
        # what the profile says went wrong: an internal error that stopped recording, a window torch lost
        "errors": [w for w in profile.metadata.get("warnings", []) if "internal error" in w or "left out" in w],
        "stopped_for_threads": any("Python tracer can crash" in w for w in profile.metadata.get("warnings", [])),
    }
    out.write_text(json.dumps(result))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--windows", type=int, default=300)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--fold-seconds", type=float, default=0.005)
    ap.add_argument("--mode", choices=("forced", "auto"), default="forced")
    ap.add_argument("--timeout", type=float, default=600)
    ap.add_argument("--one", type=Path, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.one is not None:
        one(a.one, a.windows, a.threads, a.fold_seconds, a.mode == "forced")
        return 0
    counts: dict[str, Any] = {"runs": a.runs, "clean": 0, "crashed": 0, "failed": 0, "window_changes": 0}
    out = Path(os.environ.get("TMPDIR", "/tmp")) / f"every_thread_{os.getpid()}.json"
    for _ in range(a.runs):
        out.unlink(missing_ok=True)
        cmd = [sys.executable, str(HERE), "--one", str(out), "--windows", str(a.windows), "--threads", str(a.threads)]
        cmd += ["--fold-seconds", str(a.fold_seconds), "--mode", a.mode]
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=a.timeout)
            code, tail = r.returncode, r.stderr[-400:]
        except subprocess.TimeoutExpired:
            code, tail = None, "timed out"
        if code == 0 and out.exists():
            result = json.loads(out.read_text())
            done = result["windows"] >= a.windows or result.get("stopped_for_threads", False)
            clean = done and not result["errors"]
            counts["clean" if clean else "failed"] += 1
            counts["window_changes"] += result["windows"]
            print(json.dumps(result), flush=True)
        elif code is not None and code < 0:
            counts["crashed"] += 1
            print(json.dumps({"crashed": f"signal {-code}", "stderr": tail}), flush=True)
        else:
            counts["failed"] += 1
            print(json.dumps({"failed": code, "stderr": tail}), flush=True)
    out.unlink(missing_ok=True)
    print(json.dumps(counts), flush=True)
    return 0 if counts["clean"] == a.runs else 1


if __name__ == "__main__":
    sys.exit(main())
