"""Window changes while other threads run torch ops: no crash, no invented time.

A window that records every thread (``profile_all_threads``) can stop while another thread is inside an op
it saw begin; torch 2.13 then writes that op's end into freed memory if another every-thread window is
on (collect/threads.py). Two threads run tiny ops without pause while the main thread runs its own and the
session changes windows every 300 torch calls (~100 changes a run). Prints the windows, the main thread's
recorded calls, the other threads' recorded `aten::mul` calls, the slowest op per call (an op with a stale
end would show as a huge one) and kernelscope's warning. ``python benchmarks/stress_threads.py [RUNS]``.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time


def one_run() -> None:
    import torch

    from kernelscope.collect.torch_live import Session
    from kernelscope.model import FrameKind

    stop = threading.Event()

    def busy() -> None:
        x = torch.ones(64)
        while not stop.is_set():
            x = (x * 1.0001).relu().sum().expand(64).contiguous()

    threads = [threading.Thread(target=busy, daemon=True) for _ in range(2)]
    s = Session(compile_capture=False, fold_calls=300, max_overhead=0, memory="off")
    s.start()
    y = torch.ones(8)
    for t in threads:
        t.start()
    for _ in range(30000):
        y = torch.relu(y + 1)
    p = s.finalize()
    stop.set()
    for t in threads:
        t.join()
    time_ns, count = p.exclusive("time_ns"), p.exclusive("count")
    ops = [n for n in range(1, len(p)) if p.frame_of(n).kind is FrameKind.OP]
    worst = max(ops, key=lambda n: time_ns[n] / max(count[n], 1.0))
    adds = sum(count[n] for n in ops if p.frame_of(n).name == "aten::add")
    muls = sum(count[n] for n in ops if p.frame_of(n).name == "aten::mul")
    warned = any("threads the program started" in w for w in p.metadata.get("warnings", []))
    print(
        f"windows {p.metadata['windows']}, main thread's aten::add calls {adds:.0f} of 30000, "
        f"other threads' aten::mul calls {muls:.0f} (warned: {warned}), "
        f"slowest op per call {time_ns[worst] / max(count[worst], 1.0) / 1e6:.3f} ms ({p.frame_of(worst).name}), "
        f"negative times {int((time_ns < 0).sum())}"
    )


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--one":
        one_run()
        return
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    failed = 0
    for i in range(runs):
        t0 = time.perf_counter()
        r = subprocess.run([sys.executable, __file__, "--one"], capture_output=True, text=True, timeout=600)
        out = r.stdout.strip().splitlines()[-1] if r.stdout.strip() else r.stderr.strip()[-300:]
        failed += r.returncode != 0
        print(f"run {i + 1}: exit {r.returncode}, {time.perf_counter() - t0:.1f} s: {out}")
    print(f"{runs - failed} of {runs} runs exited 0")


if __name__ == "__main__":
    main()
