"""Whole-run cost of live recording on the patterns users write (issues 17, 24), side by side in one run.

Every program of tests/live_matrix, a tiny-op LBFGS program (tinyop_lbfgs.py), nanoGPT (20 and 200 steps),
a ``transformers`` GPT-2 from a config and a word-level LSTM after pytorch/examples (word_lm.py), each in a
fresh process per mode, modes round-robin, median wall and CPU time over ``--repeats``:

- ``plain``: the program alone;
- ``ks``: ``kernelscope run`` with the default overhead budget;
- ``ks0``: ``kernelscope run --max-overhead 0`` (every op recorded);
- ``ks_inline``, ``ks0_inline``: the same with ``--fold inline`` (windows folded in the program's process);
- ``ks_graceN`` (e.g. ``ks_grace3``): the default budget with ``--grace N``;
- ``torch``: torch.profiler (no stacks) around the whole program;
- ``torch_stack``: torch.profiler with stacks, modules and shapes around the whole program.

Ratios are to ``plain``; wall time includes interpreter start-up and imports, as a user sees it; CPU time
(user + system of the process) is the figure to trust on a busy machine. For ``ks`` the table also gives the
steps recorded whole of the steps made, steps recorded in part, and kernelscope's own cost as the profile
states it (and the same for each ``ks_graceN``). ``--busy`` runs a process that burns one core beside every run (a busy neighbour).
``python benchmarks/bench_budget.py [--repeats 3] [--programs eager,lbfgs,...] [--modes ...] [--busy]``
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from _spawn import REPO, run_measured

MATRIX = REPO / "tests" / "live_matrix"
BENCH = REPO / "benchmarks"
PROGRAMS = {
    "tinyop_lbfgs": [str(BENCH / "tinyop_lbfgs.py"), "1"],
    "nanogpt20": [str(BENCH / "train_nanogpt.py"), "--steps", "20"],
    "nanogpt200": [str(BENCH / "train_nanogpt.py"), "--steps", "200"],
    # the same model at batch 32: ~0.21-s steps, a ~42-s run, where 10% of the run is more than the grace
    "nanogpt200_b32": [str(BENCH / "train_nanogpt.py"), "--steps", "200", "--batch", "32"],
    "tiny_steps": [str(BENCH / "tiny_steps.py"), "2500"],
    "hf_gpt2": [str(BENCH / "train_hf.py"), "--model", "gpt2", "--steps", "20"],
    "word_lm": [str(BENCH / "word_lm.py"), "--epochs", "1", "--emsize", "64", "--nhid", "64"],
    **{
        p.stem: [str(p)]
        for p in sorted(MATRIX.glob("*.py"))
        if not p.stem.startswith("_") and p.stem not in ("reference", "under_api")
    },
}
MODES = ("plain", "ks", "ks0", "ks_inline", "ks0_inline", "torch", "torch_stack")
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
    if mode.startswith("ks"):
        budget = ["--max-overhead", "0"] if mode.startswith("ks0") else []
        if mode.startswith("ks_grace"):
            budget = ["--grace", mode.removeprefix("ks_grace")]
        fold = ["--fold", "inline"] if mode.endswith("_inline") else []
        return [py, "-m", "kernelscope", "run", "--no-view", *budget, *fold, "-o", str(out), *program]
    return [py, "-c", TORCH_WRAP, "stack" if mode == "torch_stack" else "plain", *program]


BURN = "import time\nend = time.time() + 3600\nwhile time.time() < end:\n    pass\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--programs", default=",".join(PROGRAMS))
    ap.add_argument("--modes", default=",".join(MODES))
    ap.add_argument("--json", dest="json_out", type=Path)
    ap.add_argument("--busy", action="store_true", help="burn one core beside every run")
    args = ap.parse_args()
    burner = subprocess.Popen([sys.executable, "-c", BURN]) if args.busy else None
    try:
        run_all(args)
    finally:
        if burner is not None:
            burner.kill()


def run_all(args: argparse.Namespace) -> None:
    programs = args.programs.split(",")
    modes = args.modes.split(",")
    walls: dict[tuple[str, str], list[float]] = {}
    cpus: dict[tuple[str, str], list[float]] = {}
    coverage: dict[str, dict[str, Any]] = {}
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
                    cpus.setdefault((prog, mode), []).append(r["cpu_s"])
                    if (mode == "ks" or mode.startswith("ks_grace")) and out.exists():
                        sys.path.insert(0, str(REPO / "src"))
                        from kernelscope import load

                        cov = load(str(out)).metadata.get("coverage", {})
                        parts = cov.get("parts") or {}
                        coverage[prog if mode == "ks" else f"{prog}/{mode}"] = {
                            k: cov.get(k, 0.0)
                            for k in (
                                "recorded_seconds",
                                "program_seconds",
                                "overhead_seconds",
                                "steps",
                                "recorded_steps",
                            )
                        } | {"partial_steps": parts.get("partial_steps", 0)}
    print(f"{'program':22s}" + "".join(f"{m:>13s}" for m in modes) + "   ks: whole steps, in part, own cost s")
    rows: dict[str, dict[str, float]] = {}
    cpu_rows: dict[str, dict[str, float]] = {}
    for prog in programs:
        base = statistics.median(walls.get((prog, "plain"), [float("nan")]))
        base_cpu = statistics.median(cpus.get((prog, "plain"), [float("nan")]))
        cells, cpu_cells = [], []
        for mode in modes:
            w, c = walls.get((prog, mode)), cpus.get((prog, mode))
            med = statistics.median(w) if w else float("nan")
            cpu = statistics.median(c) if c else float("nan")
            cells.append(f"{med:6.2f}s {med / base:4.2f}x" if mode != "plain" else f"{med:12.2f}s")
            cpu_cells.append(f"cpu {cpu / base_cpu:4.2f}x" if mode != "plain" else f"cpu {cpu:7.2f}s")
            rows.setdefault(prog, {})[mode] = med
            cpu_rows.setdefault(prog, {})[mode] = cpu
        cov = "".join(
            f"   {'' if key == prog else key.split('/')[1] + ': '}{int(k.get('recorded_steps', 0))} of "
            f"{int(k.get('steps', 0))}, {int(k.get('partial_steps', 0))}, {k.get('overhead_seconds', 0):.2f}"
            for key, k in coverage.items()
            if key == prog or key.startswith(prog + "/")
        )
        print(f"{prog:22s}" + "".join(f"{x:>13s}" for x in cells) + cov)
        print(f"{'':22s}" + "".join(f"{x:>13s}" for x in cpu_cells))
    if args.json_out:
        args.json_out.write_text(json.dumps({"walls": rows, "cpu": cpu_rows, "coverage": coverage}, indent=1))


if __name__ == "__main__":
    main()
