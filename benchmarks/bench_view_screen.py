"""How `kernelscope view` fits a screen on the real traces: lines, widest line, locations that lost
their line number, and wall time per command (Python start-up included).

    python benchmarks/bench_view_screen.py [--traces ../shared/traces] [--src src]

Imports each trace once into a temporary .ksprof, then runs `view` (tree and --by kernel) at 80 and 120
columns. Point --src at another checkout's src/ to compare versions.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TRACES = [
    "tracelens_h100_owlv2_inference_modules_memory.json.gz",
    "tracelens_b200_vllm_tp8_rank0_compiled_nccl.json.gz",
    "tracelens_mi300_xdit_sd35_torch_compile_triton.json.gz",
    "tracelens_mi300_ddp_resnet_actckpt_train_rank0.json.gz",
]
LOST = re.compile(r"\.py(?![:\w])")


def main() -> None:
    here = Path(__file__).resolve().parents[1]
    ap = argparse.ArgumentParser()
    ap.add_argument("--traces", default=str(here.parent / "shared" / "traces"))
    ap.add_argument("--src", default=str(here / "src"))
    args = ap.parse_args()
    env = dict(os.environ, PYTHONPATH=args.src, NO_COLOR="1")
    with tempfile.TemporaryDirectory() as tmp:
        for name in TRACES:
            prof = Path(tmp) / (name.split(".")[0] + ".ksprof")
            cmd = [sys.executable, "-m", "kernelscope", "import", str(Path(args.traces) / name), "-o", str(prof)]
            subprocess.run(cmd, env=env, check=True, capture_output=True)
            for width in (80, 120):
                for by in ("tree", "kernel"):
                    t0 = time.perf_counter()
                    out = subprocess.run(
                        [sys.executable, "-m", "kernelscope", "view", str(prof), "--by", by],
                        env={**env, "COLUMNS": str(width)},
                        capture_output=True,
                        text=True,
                        check=True,
                    ).stdout
                    dt = time.perf_counter() - t0
                    lines = out.splitlines()
                    lost = sum(1 for line in lines if LOST.search(line))
                    widest = max(map(len, lines))
                    print(
                        f"{name[:40]:40} {width:4} {by:6} lines={len(lines):6} widest={widest:4} lost={lost:4} {dt:.2f}s"
                    )


if __name__ == "__main__":
    main()
