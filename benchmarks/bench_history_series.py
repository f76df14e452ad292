"""What following moved lines costs ``history add``: diff's pairing with the previous run, and the stored anchor.

Usage: python benchmarks/bench_history_series.py [TRACE...]   (default: every *.json.gz in ../shared/traces)
Each trace is paired with itself (the worst case: every line on both sides).
"""

from __future__ import annotations

import glob
import os
import sys
import time

from kernelscope.history.series import pairs
from kernelscope.inputs import open_profile
from kernelscope.model.io import to_bytes

HERE = os.path.dirname(os.path.abspath(__file__))


def main(paths: list[str]) -> None:
    paths = paths or sorted(glob.glob(os.path.join(HERE, "..", "..", "shared", "traces", "*.json.gz")))
    print(f"{'trace':52} {'nodes':>7} {'pairing s':>10} {'anchor KB':>10}")
    for path in paths:
        profile = open_profile(path)
        start = time.perf_counter()
        pairs(profile, profile, "line")
        took = time.perf_counter() - start
        anchor = len(to_bytes(profile.replace(timeline=None))) // 1024
        print(f"{os.path.basename(path)[:52]:52} {len(profile):7d} {took:10.3f} {anchor:10d}")


if __name__ == "__main__":
    main(sys.argv[1:])
