"""JAX: step time unprofiled vs under ``jax.profiler`` alone vs under kernelscope; XPlane import time.

Every mode runs in a fresh subprocess: it imports ``examples/jax_mlp_train.py``, compiles and warms up the
jitted train step, then times ``--steps`` steps (each waited for with ``block_until_ready``) with the profiler
running, and reports the median step time and the time spent after the run (stop + conversion/import).

- ``plain``: no profiler.
- ``jax``: ``jax.profiler.start_trace``/``stop_trace`` with JAX's defaults (Python tracer on).
- ``jax-nopy``: the same with ``python_tracer_level=0`` (what kernelscope asks for).
- ``kernelscope``: ``kernelscope.collect.jax_live.JaxSession`` (jax-nopy, then the XPlane is imported).

Import: kernelscope's ``load_xplane`` vs ``jax.profiler.ProfileData.from_file`` walking every event (JAX's
own C++ XPlane reader), on the real MI300X trace in ``../shared/traces`` and on the XPlane of a CPU run.

    python benchmarks/bench_jax.py --steps 50 --repeats 3 [--xprof-python /tmp/xprofenv/bin/python]

XProf (``pip install xprof``) is run with ``--xprof-python`` (its own venv: its pins clash with kernelscope's),
converting the same XPlane to its ``op_profile``, ``framework_op_stats`` and ``trace_viewer`` tools.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
MI300 = REPO.parent / "shared" / "traces" / "tracelens_mi300_jax_te_fused_attn_train.xplane.pb"
MODES = ("plain", "jax", "jax-nopy", "kernelscope")
sys.path.insert(0, str(REPO / "src"))  # this checkout's kernelscope, not an installed one


def child(mode: str, steps: int, keep: str) -> dict[str, Any]:
    import runpy

    import jax

    ns = runpy.run_path(str(REPO / "examples" / "jax_mlp_train.py"))
    key = jax.random.PRNGKey(0)
    layers = ns["init"](key, [512, 1024, 1024, 10])
    x = jax.random.normal(key, (256, 512))
    y = jax.random.randint(key, (256,), 0, 10)
    step = ns["train_step"]
    for _ in range(3):
        layers, loss = step(layers, x, y)
    loss.block_until_ready()
    session: Any = None
    folder = tempfile.mkdtemp()
    if mode == "kernelscope":
        from kernelscope.collect.jax_live import JaxSession

        session = JaxSession(keep_xplane=keep or None)
        session.start()
    elif mode != "plain":
        options = jax.profiler.ProfileOptions()
        if mode == "jax-nopy":
            options.python_tracer_level = 0
        jax.profiler.start_trace(folder, profiler_options=options)
    times = []
    for _ in range(steps):
        t = time.perf_counter()
        layers, loss = step(layers, x, y)
        loss.block_until_ready()
        times.append(time.perf_counter() - t)
    t = time.perf_counter()
    if mode == "kernelscope":
        session.stop()
    elif mode != "plain":
        jax.profiler.stop_trace()
    post = time.perf_counter() - t
    return {"step_ms": statistics.median(times) * 1e3, "post_s": post}


def run_child(mode: str, steps: int, keep: str = "") -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "JAX_PLATFORMS": "cpu"}
    cmd = [sys.executable, __file__, "--child", mode, "--steps", str(steps), "--keep", keep]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True).stdout
    return dict(json.loads(out.strip().splitlines()[-1]))


def time_import(path: Path, repeats: int) -> tuple[float, float]:
    from jax.profiler import ProfileData

    from kernelscope.importers.xplane import load_xplane

    ours, theirs = [], []
    for _ in range(repeats):
        t = time.perf_counter()
        load_xplane(str(path))
        ours.append(time.perf_counter() - t)
        t = time.perf_counter()
        n = 0
        for plane in ProfileData.from_file(str(path)).planes:
            for line in plane.lines:
                for ev in line.events:
                    n += len(list(ev.stats)) + 1
        theirs.append(time.perf_counter() - t)
    return statistics.median(ours), statistics.median(theirs)


XPROF_CHILD = """
import sys, time
from xprof.convert import raw_to_tool_data as r
path, tool, repeats = sys.argv[1], sys.argv[2], int(sys.argv[3])
ts = []
for _ in range(repeats):
    t = time.perf_counter()
    r.xspace_to_tool_data([path], tool, {"use_saved_result": False})
    ts.append(time.perf_counter() - t)
print(sorted(ts)[len(ts) // 2])
"""


def time_xprof(python: str, path: Path, tool: str, repeats: int) -> float:
    """XProf's own conversion of the XPlane to one of its tools, in an interpreter where xprof is installed."""
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    cmd = [python, "-c", XPROF_CHILD, str(path), tool, str(repeats)]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True).stdout
    return float(out.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--child", choices=MODES)
    ap.add_argument("--keep", default="")
    ap.add_argument("--xprof-python", help="an interpreter with xprof installed (pip install xprof==2.24.2)")
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.steps, args.keep)))
        return
    results: dict[str, list[dict[str, Any]]] = {m: [] for m in MODES}
    cpu_xplane = Path(tempfile.mkdtemp()) / "cpu.xplane.pb"
    for r in range(args.repeats):
        for mode in MODES:  # round-robin, so load drifts hit every mode alike
            keep = str(cpu_xplane) if mode == "kernelscope" and r == 0 else ""
            results[mode].append(run_child(mode, args.steps, keep))
    base = statistics.median(x["step_ms"] for x in results["plain"])
    print(f"example: examples/jax_mlp_train.py, {args.steps} steps after 3 warm-up, median of {args.repeats} runs")
    print(f"{'mode':<12} {'median step ms':>15} {'ratio':>7} {'after the run s':>16}")
    for mode in MODES:
        step = statistics.median(x["step_ms"] for x in results[mode])
        post = statistics.median(x["post_s"] for x in results[mode])
        print(f"{mode:<12} {step:>15.2f} {step / base:>6.2f}x {post:>16.3f}")
    for label, path in (("MI300X XPlane (shared/traces)", MI300), (f"CPU XPlane of {args.steps} steps", cpu_xplane)):
        if path.is_file():
            ours, theirs = time_import(path, args.repeats)
            size = path.stat().st_size / 1e6
            print(
                f"import {label} ({size:.1f} MB): kernelscope {ours:.3f} s, "
                f"jax ProfileData walk {theirs:.3f} s -> {theirs / ours:.2f}x"
            )
            if args.xprof_python:
                for tool in ("op_profile", "framework_op_stats", "trace_viewer"):
                    t = time_xprof(args.xprof_python, path, tool, args.repeats)
                    print(f"    xprof {tool}: {t:.3f} s -> kernelscope {t / ours:.2f}x faster")


if __name__ == "__main__":
    main()
