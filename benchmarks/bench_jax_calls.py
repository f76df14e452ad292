"""Per-call cost of the live JAX call-site recorder (``collect.jax_calls``): a jitted function called in a
tight loop, plain vs recorded, side by side in one process (round-robin rounds; ratios, not absolutes).

    JAX_PLATFORMS=cpu python benchmarks/bench_jax_calls.py [--calls 20000] [--rounds 3]

Two functions: one array argument, and a 20-entry dict of arrays plus an array (a small parameter pytree). And an
op run eagerly (``jnp.asarray`` of a NumPy array: ``jit(stage)``), whose caller the recorder notes too: plain vs with
the recorder installed, in alternating rounds.
"""

from __future__ import annotations

import argparse
import sys
import time
import types
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import jax
import jax.numpy as jnp
import numpy as np

from kernelscope.collect.jax_calls import CallSites


def add_one(x: Any) -> Any:
    return x + 1


def with_params(p: Any, x: Any) -> Any:
    return x + 1


def _per_call_us(fn: Any, args: tuple[Any, ...], calls: int) -> float:
    t = time.perf_counter()
    for _ in range(calls):
        fn(*args)
    jax.block_until_ready(fn(*args))
    return (time.perf_counter() - t) / calls * 1e6


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=20000)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    sites = CallSites()
    plain = {"1 array": jax.jit(add_one), "dict of 20 + array": jax.jit(with_params)}
    sites.install(jax)
    try:  # fresh function objects, so JAX's caches do not make the two the same object
        recorded = {
            "1 array": jax.jit(types.FunctionType(add_one.__code__, globals(), "add_one")),
            "dict of 20 + array": jax.jit(types.FunctionType(with_params.__code__, globals(), "with_params")),
        }
    finally:
        sites.remove()
    x = jnp.ones(4)
    params = {f"w{i}": jnp.ones(4) for i in range(20)}
    args = {"1 array": (x,), "dict of 20 + array": (params, x)}
    for name in plain:  # compile both
        jax.block_until_ready(plain[name](*args[name]))
        jax.block_until_ready(recorded[name](*args[name]))
    print(f"{'function':<20} {'plain µs':>9} {'recorded µs':>12} {'extra µs':>9}")
    for r in range(a.rounds):
        for name in plain:
            p = _per_call_us(plain[name], args[name], a.calls)
            q = _per_call_us(recorded[name], args[name], a.calls)
            print(f"{name:<20} {p:9.1f} {q:12.1f} {q - p:9.1f}   (round {r + 1})")
    print("calls recorded:", {k: len(v) for k, v in sites.calls.items()})
    host = np.ones(16, np.float32)

    def stage() -> None:
        jnp.asarray(host)

    stage()
    print(f"{'eager op':<20} {'plain µs':>9} {'recorded µs':>12} {'extra µs':>9}")
    for r in range(a.rounds):
        p = _per_call_us(stage, (), a.calls // 4)
        eager = CallSites()
        eager.install(jax)
        try:
            q = _per_call_us(stage, (), a.calls // 4)
        finally:
            eager.remove()
        print(f"{'jnp.asarray (stage)':<20} {p:9.1f} {q:12.1f} {q - p:9.1f}   (round {r + 1})")


if __name__ == "__main__":
    main()
