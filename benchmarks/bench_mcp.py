"""``kernelscope mcp`` latency per tool, through the MCP SDK's client over stdio.

    python benchmarks/bench_mcp.py [TRACE] [--repeats 3]

Spawns ``python -m kernelscope mcp``, calls every tool on TRACE (default: the largest shared trace) and
prints per tool the first call (which opens the file, for ``summary``), the median of the repeats that
follow (answered from the server's open-file cache), and the answer's size. Compare: the CLI re-reads
the file on every invocation (``kernelscope view TRACE --by kernel --json``, timed the same way).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters

REPO = Path(__file__).resolve().parents[1]
DEFAULT = REPO.parent / "shared" / "traces" / "tracelens_mi300_xdit_sd35_torch_compile_triton.json.gz"


def calls(trace: str) -> list[tuple[str, dict[str, object]]]:
    return [
        ("summary", {"path": trace}),
        ("top", {"path": trace, "by": "line"}),
        ("top", {"path": trace, "by": "kernel", "metric": "count"}),
        ("tree", {"path": trace, "depth": 4}),
        ("source", {"path": trace, "node": 5}),
        ("findings", {"path": trace}),
        ("timeline", {"path": trace}),
        ("diff", {"path": trace, "new": trace, "by": "kernel"}),
    ]


async def measure(trace: str, repeats: int) -> list[tuple[str, float, float, int]]:
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"))
    params = StdioServerParameters(command=sys.executable, args=["-m", "kernelscope", "mcp"], env=env)
    out = []
    async with Client(params) as client:
        for name, args in calls(trace):
            times, size = [], 0
            for _ in range(1 + repeats):
                t0 = time.perf_counter()
                result = await client.call_tool(name, args)
                times.append(time.perf_counter() - t0)
                size = len(result.content[0].text)  # type: ignore[union-attr]
            label = f"{name}({', '.join(f'{k}={v}' for k, v in args.items() if k not in ('path', 'new'))})"
            out.append((label, times[0], statistics.median(times[1:]), size))
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("trace", nargs="?", default=str(DEFAULT))
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    print(f"trace: {Path(a.trace).name} ({Path(a.trace).stat().st_size / 1e6:.1f} MB)")
    print(f"{'tool call':44} {'first s':>8} {'then s':>8} {'bytes':>7}")
    for label, first, then, size in anyio.run(measure, a.trace, a.repeats):
        print(f"{label:44} {first:8.3f} {then:8.3f} {size:7d}")
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"))
    cli = [sys.executable, "-m", "kernelscope", "view", a.trace, "--by", "kernel", "--json"]
    times = []
    for _ in range(a.repeats):
        t0 = time.perf_counter()
        subprocess.run(cli, env=env, capture_output=True, check=True)
        times.append(time.perf_counter() - t0)
    print(f"{'CLI: kernelscope view --by kernel --json':44} {'':8} {statistics.median(times):8.3f}")


if __name__ == "__main__":
    main()
