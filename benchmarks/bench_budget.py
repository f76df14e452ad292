"""Whole-run cost of live recording on the patterns users write (issue 17), side by side in one run.

Every program of tests/live_matrix plus a tiny-op LBFGS program (tinyop_lbfgs.py), each in a fresh
process per mode, modes round-robin, median wall time over ``--repeats``:

- ``plain``: the program alone;
- ``ks``: ``kernelscope run`` with the default overhead budget;
- ``ks0``: ``kernelscope run --max-overhead 0`` (every op recorded);
- ``torch``: torch.profiler (no stacks) around the whole program;
- ``torch_stack``: torch.profiler with stacks, modules and shapes around the whole program.

Ratios are to ``plain``; wall time includes interpreter start-up and imports, as a user sees it.
``python benchmarks/bench_budget.py [--repeats 3] [--programs eager,lbfgs,...] [--modes ...]``
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

from _spawn import REPO, run_measured

MATRIX = REPO / "tests" / "live_matrix"
PROGRAMS = {
    "tinyop_lbfgs": [str(REPO / "benchmarks" / "tinyop_lbfgs.py"), "1"],
    **{
        p.stem: [str(p)]
        for p in sorted(MATRIX.glob("*.py"))
        if not p.stem.startswith("_") and p.stem not in ("reference", "under_api")
    },
}
MODES = ("plain", "ks", "ks0", "torch", "torch_stack")
TORCH_WRAP = """
import runpy, sys
from torch.autograd.profiler import profile
stack = sys.argv[1] == "stack"
sys.argv = sys.argv[2:]
sys.path.insert(0, sys.argv[0].rsplit("/", 1)[0])
p = profile(use_kineto=True, with_stack=stack, with_modules=stack, record_shapes=stack)
p.__enter__()
try:
    runpy.run_path(sys.argv[0], run_name="__main__")
finally:
    p.__exit__(None, None, None)
    p.kineto_results.experimental_event_tree()
"""


def command(mode: str, program: list[str], out: Path) -> list[str]:
    py = sys.executable
    if mode == "plain":
        return [py, *program]
    if mode in ("ks", "ks0"):
        budget = ["--max-overhead", "0"] if mode == "ks0" else []
        return [py, "-m", "kernelscope", "run", "--no-view", *budget, "-o", str(out), *program]
    return [py, "-c", TORCH_WRAP, "stack" if mode == "torch_stack" else "plain", *program]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--programs", default=",".join(PROGRAMS))
    ap.add_argument("--modes", default=",".join(MODES))
    ap.add_argument("--json", dest="json_out", type=Path)
    args = ap.parse_args()
    programs = args.programs.split(",")
    modes = args.modes.split(",")
    walls: dict[tuple[str, str], list[float]] = {}
    coverage: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(args.repeats):
            for prog in programs:
                for mode in modes:
                    out = Path(tmp) / f"{prog}-{mode}.ksprof"
                    try:
                        r = run_measured(
                            command(mode, PROGRAMS[prog], out), Path(tmp) / "log.txt", env={"KS_STEP": "0"}
                        )
                    except SystemExit as exc:  # a mode that cannot run this program (one profiler per thread)
                        print(f"{prog}/{mode}: {str(exc).splitlines()[-1]}", file=sys.stderr)
                        continue
                    walls.setdefault((prog, mode), []).append(r["wall_s"])
                    if mode == "ks" and out.exists():
                        sys.path.insert(0, str(REPO / "src"))
                        from kernelscope import load

                        cov = load(str(out)).metadata.get("coverage", {})
                        coverage[prog] = {
                            k: cov.get(k, 0.0) for k in ("recorded_seconds", "program_seconds", "overhead_seconds")
                        }
    print(f"{'program':22s}" + "".join(f"{m:>13s}" for m in modes) + "   ks recorded of program s (own cost)")
    rows = {}
    for prog in programs:
        base = statistics.median(walls.get((prog, "plain"), [float("nan")]))
        cells = []
        for mode in modes:
            w = walls.get((prog, mode))
            med = statistics.median(w) if w else float("nan")
            cells.append(f"{med:6.2f}s {med / base:4.2f}x" if mode != "plain" else f"{med:12.2f}s")
            rows.setdefault(prog, {})[mode] = med
        c = coverage.get(prog, {})
        cov = (
            f"   {c.get('recorded_seconds', 0):.2f} of {c.get('program_seconds', 0):.2f} ({c.get('overhead_seconds', 0):.2f})"
            if c
            else ""
        )
        print(f"{prog:22s}" + "".join(f"{x:>13s}" for x in cells) + cov)
    if args.json_out:
        args.json_out.write_text(json.dumps({"walls": rows, "coverage": coverage}, indent=1))


if __name__ == "__main__":
    main()
