"""A ``transformers`` training script under ``kernelscope run`` vs plain python, side by side.

    python benchmarks/bench_hf.py [--model gpt2|bert] [--steps 50] [--repeats 3]

Workload: ``train_hf.py`` (a 2-layer GPT-2 or BERT from its config, random weights, nothing
downloaded; ``pip install transformers``). Each mode runs in a fresh process, round-robin:

  plain  python train_hf.py
  ks     python -m kernelscope run --no-view -o X.ksprof train_hf.py   (whole run, saving included)

It reports the whole-run wall and CPU time ratios, peak RSS and median step time, then checks the
last profile: does it have FLOPs on the model's modules (``view --by module -m time_ns,flops``), and
do lines of transformers' ``modeling_*.py`` appear (``view --by line``)?
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

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _spawn import REPO, child_env, python, run_measured, spread

TRAIN = str(REPO / "benchmarks" / "train_hf.py")


def view(path: Path, *options: str) -> str:
    cmd = [python(), "-m", "kernelscope", "view", str(path), *options]
    done = subprocess.run(cmd, capture_output=True, text=True, env=child_env(), check=False)
    return done.stdout + done.stderr  # an unknown metric (no FLOPs in the profile) is an answer too


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", choices=("gpt2", "bert"), default="gpt2")
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    train = [TRAIN, "--model", args.model, "--steps", str(args.steps)]
    rows: dict[str, list[dict[str, Any]]] = {"plain": [], "ks": []}
    with tempfile.TemporaryDirectory(prefix="ks-bench-hf-") as tmp_:
        tmp = Path(tmp_)
        profile = tmp / "hf.ksprof"
        for r in range(args.repeats):
            for mode in rows:
                times = tmp / f"{mode}-{r}.json"
                cmd = [python(), *train, "--times-out", str(times)]
                if mode == "ks":
                    cmd = [python(), "-m", "kernelscope", "run", "--no-view", "-o", str(profile), *cmd[1:]]
                row = run_measured(cmd, tmp / f"{mode}-{r}.log")
                row.update(json.loads(times.read_text()))
                rows[mode].append(row)
                print(
                    f"  [{r + 1}/{args.repeats}] {mode:<6} wall {row['wall_s']:.2f} s, cpu {row['cpu_s']:.2f} s, "
                    f"peak RSS {row['peak_rss_mb']:.0f} MB",
                    file=sys.stderr,
                    flush=True,
                )
        by_module = view(profile, "--by", "module", "-m", "time_ns,flops", "--limit", "15")
        by_line = view(profile, "--by", "line", "-m", "time_ns,flops", "--limit", "15")
        log = (tmp / f"ks-{args.repeats - 1}.log").read_text(errors="replace")
        coverage = subprocess.run(
            [
                python(),
                "-c",
                "import json,sys; from kernelscope import load; "
                "print(json.dumps(load(sys.argv[1]).metadata.get('coverage')))",
                str(profile),
            ],
            capture_output=True,
            text=True,
            env=child_env(),
            check=False,
        ).stdout.strip()
        # once more with transformers' folder forced to count as user code (KERNELSCOPE_USER_PATHS)
        forced = tmp / "forced.ksprof"
        package = subprocess.run(
            [python(), "-c", "import os, transformers; print(os.path.dirname(transformers.__file__))"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        cmd = [python(), "-m", "kernelscope", "run", "--no-view", "-o", str(forced), *train]
        run_measured(cmd, tmp / "forced.log", env={"KERNELSCOPE_USER_PATHS": package})
        by_line_forced = view(forced, "--by", "line", "-m", "time_ns,flops", "--limit", "15")
        forced_tree = view(forced, "--depth", "4", "--threshold", "2")
    print(
        f"transformers {args.model} from its config, {args.steps} steps, 1 thread, {args.repeats} round-robin repeats"
    )
    print(f"{'mode':<6} {'wall s':>20} {'wall ratio':>20} {'cpu s':>20} {'peak RSS MB':>20} {'median step ms':>22}")
    for mode, rs in rows.items():
        ratios = [a["wall_s"] / b["wall_s"] for a, b in zip(rs, rows["plain"], strict=True)]
        steps = [statistics.median(x["step_s"][1:]) * 1e3 for x in rs]
        print(
            f"{mode:<6} {spread([x['wall_s'] for x in rs]):>20} {spread(ratios):>20} "
            f"{spread([x['cpu_s'] for x in rs]):>20} {spread([x['peak_rss_mb'] for x in rs]):>20} {spread(steps):>22}"
        )
    cpu_ratio = statistics.median(x["cpu_s"] for x in rows["ks"]) / statistics.median(x["cpu_s"] for x in rows["plain"])
    print(f"whole-run CPU time ratio ks/plain: {cpu_ratio:.2f}x")
    print("\n$ kernelscope view X.ksprof --by module -m time_ns,flops --limit 15\n" + by_module)
    print("$ kernelscope view X.ksprof --by line -m time_ns,flops --limit 15\n" + by_line)
    modeling = sorted({w for line in by_line.splitlines() for w in line.split() if "modeling_" in w})
    print(f"modeling_*.py lines in the line view: {modeling or 'none'}")
    print(f"\n$ KERNELSCOPE_USER_PATHS={package} kernelscope run ...; kernelscope view --by line\n" + by_line_forced)
    print("$ kernelscope view X.ksprof --depth 4 --threshold 2   (the same forced run)\n" + forced_tree)
    print("kernelscope's stderr (last run):\n" + "\n".join(log.strip().splitlines()[-6:]))
    print(f"coverage (last run): {coverage}")


if __name__ == "__main__":
    main()
