"""Whole training runs under ``kernelscope run`` vs plain python vs torch.profiler, side by side.

    python benchmarks/bench_run.py                       # all cases, 3 round-robin repeats
    python benchmarks/bench_run.py --repeats 5 --cases step20,step200
    python benchmarks/bench_run.py --minutes 3           # long loop: RSS over time, plain vs kernelscope

Workload: ``train_nanogpt.py`` (a 4-layer nanoGPT-style model, 1 thread, CPU). Every run is a fresh
process; the modes run round-robin, each case once per repeat, and the report gives the median over
repeats with (min-max) so the noise of a shared machine shows. Modes:

  plain     python train_nanogpt.py --steps N
  ks        python -m kernelscope run --no-view -o X.ksprof train_nanogpt.py --steps N
            (whole run: start-up, recording from the first torch call, folding as it goes, saving)
  ks-step   the same, the script calling kernelscope.step() after every step
  torch     train_nanogpt.py --torch-profiler: torch.profiler(with_stack, with_modules, record_shapes)
            around the loop, then key_averages()

Case groups (``--cases``): ``run`` (plain/ks/ks-step at 400 steps and plain/ks at 100: wall, CPU, peak
RSS), ``step20`` and ``step200`` (plain/ks/ks-step/torch: median step time; the first step of a 20-step
run and the first 5 of a 200-step run are left out as warm-up), ``cost`` (100 steps under ``kernelscope
run`` with --max-overhead 0, --no-memory, --shapes off, --no-compile-provenance, and the last three
together: where the cost goes).
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

TRAIN = str(REPO / "benchmarks" / "train_nanogpt.py")
GROUPS = {
    "run": [("plain", 100), ("ks", 100), ("plain", 400), ("ks", 400), ("ks-step", 400)],
    "step20": [("plain", 20), ("ks", 20), ("ks-step", 20), ("torch", 20)],
    "step200": [("plain", 200), ("ks", 200), ("ks-step", 200), ("torch", 200)],
    # where kernelscope's cost goes: the same run with one recording feature off at a time
    "cost": [(m, 100) for m in ("plain", "ks", "ks-all", "ks-nomem", "ks-noshapes", "ks-nocompile", "ks-lean")],
}
VARIANTS = {
    "ks-nomem": ["--no-memory"],
    "ks-noshapes": ["--shapes", "off"],
    "ks-nocompile": ["--no-compile-provenance"],
    "ks-lean": ["--no-memory", "--shapes", "off", "--no-compile-provenance"],
    "ks-all": ["--max-overhead", "0"],  # no overhead budget: every window recorded
}
WARMUP = {20: 1, 200: 5}


def command(mode: str, train_args: list[str], out: Path) -> list[str]:
    ks = [python(), "-m", "kernelscope", "run", "--no-view", "-o", str(out), TRAIN]
    if mode in VARIANTS:
        return [*ks[:-1], *VARIANTS[mode], TRAIN, *train_args]
    return {
        "plain": [python(), TRAIN, *train_args],
        "ks": [*ks, *train_args],
        "ks-step": [*ks, *train_args, "--ks-step"],
        "torch": [python(), TRAIN, *train_args, "--torch-profiler"],
    }[mode]


SUMMARY = """
import json, sys
from kernelscope.model import load
p = load(sys.argv[1])
md = p.metadata
rec = md.get("recording", {})
print(json.dumps({"nodes": len(p), "events": md.get("events"), "windows": md.get("windows"),
  "fold_s": md.get("fold_seconds"), "recorded_steps": rec.get("recorded_steps"),
  "recorded_s": rec.get("recorded_seconds"), "deferred": rec.get("deferred_window_changes"),
  "time_s": p.total("time_ns") / 1e9, "flops": p.total("flops") if "flops" in p.metric_names else None,
  "coverage": md.get("coverage", {}), "warnings": md.get("warnings", [])}))
"""


def summarize(path: Path) -> dict[str, Any]:
    done = subprocess.run(
        [python(), "-c", SUMMARY, str(path)], capture_output=True, text=True, env=child_env(), check=True
    )
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def run_cases(cases: list[tuple[str, int]], repeats: int, tmp: Path) -> dict[tuple[str, int], list[dict[str, Any]]]:
    results: dict[tuple[str, int], list[dict[str, Any]]] = {c: [] for c in cases}
    failures: list[str] = []
    for r in range(repeats):
        for mode, steps in cases:
            tag = f"{mode}-{steps}-{r}"
            times, out = tmp / f"{tag}.json", tmp / f"{tag}.ksprof"
            cmd = command(mode, ["--steps", str(steps), "--times-out", str(times)], out)
            try:
                row = run_measured(cmd, tmp / f"{tag}.log")
            except SystemExit as exc:  # report it and go on: one crashed run must not lose the others
                print(f"  [{r + 1}/{repeats}] {mode} {steps} steps FAILED: {exc}", file=sys.stderr, flush=True)
                failures.append(f"{mode} {steps} steps, repeat {r + 1}: {str(exc).splitlines()[-1]}")
                continue
            row.update(json.loads(times.read_text()))
            if out.exists():
                row["profile"] = summarize(out)
                row["profile_kb"] = out.stat().st_size / 1e3
            results[(mode, steps)].append(row)
            print(
                f"  [{r + 1}/{repeats}] {mode:<8} {steps:>4} steps: wall {row['wall_s']:.2f} s, "
                f"cpu {row['cpu_s']:.2f} s, peak RSS {row['peak_rss_mb']:.0f} MB",
                file=sys.stderr,
                flush=True,
            )
    for failure in failures:
        print(f"failed run (left out of the medians): {failure}")
    return {c: rows for c, rows in results.items() if rows}


def report_run(res: dict[tuple[str, int], list[dict[str, Any]]]) -> None:
    print("\n## whole run (python start to exit; kernelscope: folding and saving included)")
    print(
        f"{'mode':<9} {'steps':>5} {'wall s':>20} {'wall ratio':>20} {'cpu s':>20} {'cpu ratio':>10} {'peak RSS MB':>22}"
    )
    for (mode, steps), rows in res.items():
        plain = res.get(("plain", steps))
        wall = [r["wall_s"] for r in rows]
        cpu = [r["cpu_s"] for r in rows]
        rss = [r["peak_rss_mb"] for r in rows]
        # per repeat: this mode's wall over the plain run of the same repeat (same machine load)
        ratios = [r["wall_s"] / p["wall_s"] for r, p in zip(rows, plain, strict=True)] if plain else []
        cpu_ratio = statistics.median(cpu) / statistics.median([p["cpu_s"] for p in plain]) if plain else 0.0
        print(
            f"{mode:<9} {steps:>5} {spread(wall):>20} {spread(ratios):>20} {spread(cpu):>20} "
            f"{cpu_ratio:>9.2f}x {spread(rss):>22}"
        )
    for mode in ("plain", "ks"):
        if (mode, 100) in res and (mode, 400) in res:
            growth = [
                b["peak_rss_mb"] - a["peak_rss_mb"] for a, b in zip(res[(mode, 100)], res[(mode, 400)], strict=True)
            ]
            print(f"peak RSS growth 100 -> 400 steps, {mode}: {spread(growth)} MB")
    if ("ks", 400) in res and ("plain", 400) in res:
        over = [k["peak_rss_mb"] - p["peak_rss_mb"] for k, p in zip(res[("ks", 400)], res[("plain", 400)], strict=True)]
        print(f"peak RSS over plain at 400 steps, ks: {spread(over)} MB")


def report_steps(res: dict[tuple[str, int], list[dict[str, Any]]], steps: int) -> None:
    warm = WARMUP.get(steps, 1)
    print(f"\n## median step time, {steps}-step runs (first {warm} step(s) left out)")
    print(
        f"{'mode':<9} {'median step ms':>22} {'ratio to plain':>20} {'max step ms':>22} "
        f"{'median step CPU ms':>22} {'CPU ratio':>20}"
    )
    plain = res[("plain", steps)]
    for (mode, n), rows in res.items():
        if n != steps:
            continue
        med = [statistics.median(r["step_s"][warm:]) * 1e3 for r in rows]
        top = [max(r["step_s"][warm:]) * 1e3 for r in rows]
        ratios = [m / (statistics.median(p["step_s"][warm:]) * 1e3) for m, p in zip(med, plain, strict=False)]
        cpu = [statistics.median(r["step_cpu_s"][warm:]) * 1e3 for r in rows]
        cpu_ratios = [c / (statistics.median(p["step_cpu_s"][warm:]) * 1e3) for c, p in zip(cpu, plain, strict=False)]
        print(
            f"{mode:<9} {spread(med):>22} {spread(ratios):>20} {spread(top):>22} {spread(cpu):>22} {spread(cpu_ratios):>20}"
        )


def report_profiles(res: dict[tuple[str, int], list[dict[str, Any]]]) -> None:
    print("\n## kernelscope profiles (last repeat)")
    for (mode, steps), rows in res.items():
        p = rows[-1].get("profile")
        if p is None:
            continue
        print(
            f"{mode:<8} {steps:>4} steps: {p['nodes']} nodes, {p['events']} events in {p['windows']} windows, "
            f"fold {p['fold_s']:.2f} s, recorded {p['recorded_steps']} steps / {p['recorded_s']:.2f} s, "
            f"deferred {p['deferred']}, time {p['time_s']:.2f} s, flops {p['flops']}, "
            f"{rows[-1]['profile_kb']:.0f} kB, warnings {p['warnings']}"
        )
        cov = p.get("coverage") or {}
        if cov:
            print(
                f"{'':<8} coverage: recorded {cov['recorded_seconds']:.2f} s of {cov['run_seconds']:.2f} s "
                f"({cov['recorded_steps']} of {cov['steps']} steps), overhead {cov['overhead_seconds']:.2f} s "
                f"(budget {cov['max_overhead']:g}), held {cov['budget_holds']} time(s) for {cov['held_seconds']:.2f} s"
            )


def long_loop(minutes: float, tmp: Path, every: float, json_out: Path | None, modes: tuple[str, ...]) -> None:
    """plain and ks one after the other, each training for ``minutes``; RSS sampled from outside."""
    seconds = minutes * 60
    rows = {}
    for mode in modes:
        times, out = tmp / f"long-{mode}.json", tmp / f"long-{mode}.ksprof"
        cmd = command(mode, ["--seconds", str(seconds), "--times-out", str(times)], out)
        rows[mode] = run_measured(cmd, tmp / f"long-{mode}.log", sample_every=every)
        rows[mode]["steps"] = len(json.loads(times.read_text())["step_s"])
        print(f"  long {mode}: {rows[mode]['steps']} steps, wall {rows[mode]['wall_s']:.1f} s", file=sys.stderr)
    print(f"\n## long loop: {minutes:g} min of training each, RSS (MB) sampled every {every:g} s")
    marks = [seconds * f for f in (0.1, 0.25, 0.5, 0.75, 1.0)]
    print(f"{'mode':<6} {'steps':>6} " + " ".join(f"{f't={m:.0f}s':>8}" for m in marks) + f" {'peak':>8}")
    for mode, row in rows.items():
        samples = row["rss_samples"]
        at = [next((rss for t, rss in samples if t >= m), samples[-1][1]) for m in marks]
        print(f"{mode:<6} {row['steps']:>6} " + " ".join(f"{v:>8.0f}" for v in at) + f" {row['peak_rss_mb']:>8.0f}")
    if json_out is not None:
        json_out.write_text(json.dumps(rows))
    if "ks" not in rows:
        return
    ks = rows["ks"]["rss_samples"]
    half = [s for s in ks if s[0] >= seconds / 2 and s[0] <= seconds]
    if len(half) >= 2:
        slope = (half[-1][1] - half[0][1]) / (half[-1][0] - half[0][0])
        print(
            f"ks RSS slope over the second half of the loop: {slope * 60:.1f} MB/min "
            f"-> extrapolated to 10 min: {half[-1][1] + slope * (600 - half[-1][0]):.0f} MB "
        )
    if "plain" in rows:
        print(f"ks peak RSS over plain peak: {rows['ks']['peak_rss_mb'] - rows['plain']['peak_rss_mb']:.0f} MB")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", default="run,step20,step200", help=f"comma-separated groups: {', '.join(GROUPS)}")
    ap.add_argument("--modes", default="", help="only these modes (plain is always run); default: all")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--minutes", type=float, default=0.0, help="instead: the long loop, this many minutes per mode")
    ap.add_argument("--sample-every", type=float, default=1.0, help="long loop: RSS sampling period (s)")
    ap.add_argument("--json-out", type=Path, help="also write the raw results as JSON")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="ks-bench-run-") as tmp_:
        tmp = Path(tmp_)
        if args.minutes:
            modes = tuple(args.modes.split(",")) if args.modes else ("plain", "ks")
            long_loop(args.minutes, tmp, args.sample_every, args.json_out, modes)
            return
        modes = set(args.modes.split(",")) | {"plain"} if args.modes else None
        groups = args.cases.split(",")
        cases = list(dict.fromkeys(c for g in groups for c in GROUPS[g] if modes is None or c[0] in modes))
        res = run_cases(cases, args.repeats, tmp)
    print(f"nanoGPT-style model ({TRAIN}), 1 thread, {args.repeats} round-robin repeats: median (min-max)")
    for group in ("run", "cost"):
        if group in groups:
            report_run({c: r for c, r in res.items() if c in GROUPS[group]})
    for steps in (20, 200):
        if f"step{steps}" in groups:
            report_steps(res, steps)
    report_profiles(res)
    if args.json_out:
        raw = {f"{m}-{s}": rows for (m, s), rows in res.items()}
        args.json_out.write_text(json.dumps(raw))


if __name__ == "__main__":
    main()
