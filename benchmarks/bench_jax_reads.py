"""Per-read cost of the live JAX host-read recorder (``collect.jax_reads``): ``float(x)`` of a small, finished
array in a tight loop, plain vs recorded, side by side in one process (round-robin rounds; ratios, not
absolutes). The read of a finished array is the cheapest there is, so this is the recorder's worst case.

    JAX_PLATFORMS=cpu python benchmarks/bench_jax_reads.py [--reads 20000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import jax
import jax.numpy as jnp

from kernelscope.collect.jax_reads import HostReads


def _per_read_us(arrays: list[Any]) -> float:
    t = time.perf_counter()
    for a in arrays:
        float(a)
    return (time.perf_counter() - t) / len(arrays) * 1e6


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reads", type=int, default=20000)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    print(f"jax {jax.__version__}, {a.reads} reads of float(x) per measurement")
    print("round  plain µs/read  recorded µs/read  added µs")
    for r in range(a.rounds):
        # fresh arrays each time: a read caches the host copy in the array
        plain = _per_read_us([jnp.asarray(float(k)) for k in range(a.reads)])
        reads = HostReads()
        reads.install(jax)
        try:
            recorded = _per_read_us([jnp.asarray(float(k)) for k in range(a.reads)])
        finally:
            reads.remove()
        assert sum(n for n, _ in reads.by_line.values()) >= a.reads, reads.note
        print(f"{r + 1:5d}  {plain:13.2f}  {recorded:16.2f}  {recorded - plain:+8.2f}")


if __name__ == "__main__":
    main()
