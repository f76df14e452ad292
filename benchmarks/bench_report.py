"""HTML report: file size, time to write it, and time to first render in headless chromium.

    PYTHONPATH=src python benchmarks/bench_report.py [--sizes 1000,10000,100000] [TRACE_OR_PROFILE ...]

Synthetic profiles have N nodes in a random tree (seeded) of python/module/op/kernel frames.
"Render" is from ``page.goto`` to the page's ready mark (data parsed, tree derived, icicle and
table drawn), in Debian's chromium through Playwright, measured twice: wall time around
``page.goto`` + wait (includes Playwright's polling) and the page's own ``performance.now()``
at the ready mark (from navigation start); medians of 3 loads.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

from kernelscope.inputs import open_profile
from kernelscope.model import Frame, Profile, ProfileBuilder
from kernelscope.render.report import write_report

CHROMIUM = os.environ.get("KERNELSCOPE_CHROMIUM", "/usr/bin/chromium")


def synthetic(n: int, seed: int = 0) -> Profile:
    rng = random.Random(seed)
    b = ProfileBuilder()
    nodes = [0]
    depth = {0: 0}
    makers = [
        lambda i: Frame.python(f"model/layer{i % 97}.py", i % 500 + 1, f"fn{i % 311}"),
        lambda i: Frame.module_(f"blocks.{i % 48}.mlp.fc{i % 3}", "Linear"),
        lambda i: Frame.op(f"aten::op{i % 211}"),
    ]
    i = 0
    while len(b) < n:
        i += 1
        parent = nodes[rng.randrange(len(nodes))] if rng.random() < 0.7 else nodes[-1]
        if depth[parent] >= 60:
            parent = 0
        leaf = rng.random() < 0.35
        frame = Frame.kernel(f"kernel_{i % 4001}_sm90", "cuda:0", 7) if leaf else makers[i % 3](i)
        node = b.child(parent, frame)
        if node in depth:
            continue
        depth[node] = depth[parent] + 1
        if leaf:
            b.add(node, "time_ns", float(rng.randint(1_000, 2_000_000)))
            b.add(node, "count", float(rng.randint(1, 50)))
            b.add(node, "flops", float(rng.randint(0, 10**9)))
        else:
            nodes.append(node)
            b.add(node, "cpu_time_ns", float(rng.randint(0, 100_000)))
    return b.build({"command": ["synthetic", str(n)]})


def render_seconds(browser: object, path: Path, repeat: int = 3) -> tuple[float, float]:
    """(wall seconds from goto to ready, the page's own navigation-start-to-ready seconds), medians."""
    times, inpage = [], []
    for _ in range(repeat):
        page = browser.new_page(viewport={"width": 1280, "height": 900})  # type: ignore[attr-defined]
        t0 = time.perf_counter()
        page.goto(path.as_uri())
        page.wait_for_selector("body[data-ready='1']", timeout=120_000)
        times.append(time.perf_counter() - t0)
        inpage.append(page.evaluate("ksReadyMs") / 1000)
        page.close()
    return statistics.median(times), statistics.median(inpage)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="1000,10000,100000")
    ap.add_argument("inputs", nargs="*")
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright

    cases: list[tuple[str, Profile]] = [
        (f"synthetic {int(n):,} nodes", synthetic(int(n))) for n in args.sizes.split(",")
    ]
    for path in args.inputs:
        t0 = time.perf_counter()
        prof = open_profile(path)
        print(f"# opened {path} in {time.perf_counter() - t0:.2f} s", file=sys.stderr)
        cases.append((f"{os.path.basename(path)} ({len(prof):,} nodes)", prof))
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=["--headless", "--no-sandbox"])
        print("| profile | nodes | report size | write (s) | goto→ready (s) | in-page ready (s) |")
        print("|---|---:|---:|---:|---:|---:|")
        for name, prof in cases:
            out = Path(tmp) / "r.html"
            t0 = time.perf_counter()
            write_report(prof, out)
            write_s = time.perf_counter() - t0
            size = out.stat().st_size
            wall, inpage = render_seconds(browser, out)
            print(
                f"| {name} | {len(prof):,} | {size / 1e6:.2f} MB | {write_s:.2f} | {wall:.2f} | {inpage:.2f} |",
                flush=True,
            )
        browser.close()


if __name__ == "__main__":
    main()
