"""Import speed and peak memory: kernelscope vs a plain ``json.loads`` vs HTA's ``TraceAnalysis`` loader.

The decode floor is measured too: ``gunzip`` (decompress the file, keep nothing) and ``msgspec`` (read it
all, ``msgspec.json.decode``: the fastest whole-document decode in this environment).

Every measurement runs in a fresh subprocess that reports its own wall time for the load and its
peak RSS (``ru_maxrss``) plus the RSS it had before loading (interpreter + imports). The same files
are given to every tool: the real trace as it is (``.json.gz``) and synthetic traces made by
replicating its events ``k`` times with shifted timestamps and ids (plain ``.json`` in ``--workdir``,
never in the repository).

    python benchmarks/bench_import.py                      # OWLv2 at 1x, 10x, 32x (~1 GB)
    python benchmarks/bench_import.py --scales 1,10 --hta-python /tmp/htaenv/bin/python
    python benchmarks/bench_import.py --scales 1,10,32 --tools kernelscope,json   # without HTA

HTA (pip package ``HolisticTraceAnalysis``) is run with ``--hta-python`` (an interpreter where it is
installed; its pins may clash with kernelscope's environment, so a separate venv is easiest).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

DEFAULT_TRACE = (
    Path(__file__).resolve().parents[1].parent
    / "shared"
    / "traces"
    / "tracelens_h100_owlv2_inference_modules_memory.json.gz"
)
ID_ARGS = ("correlation", "External id", "Python id", "Python parent id", "Ev Idx")


# --- children: one measurement each -------------------------------------------------
def _rss_mb() -> float:
    """Peak RSS of this process so far. ``VmHWM`` restarts at exec; ``ru_maxrss`` is inherited from the parent."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _cpu_s() -> float:
    """CPU time of this process and its waited-for children (a loader may use worker processes)."""
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def child(tool: str, path: str) -> None:
    if tool == "kernelscope":
        from kernelscope.importers import import_file

        before = _rss_mb()
        t0, cpu0 = time.perf_counter(), _cpu_s()
        profile = import_file(path)
        seconds = time.perf_counter() - t0
        extra = {"nodes": len(profile), "timeline_rows": len(profile.timeline or ())}
    elif tool == "json":
        before = _rss_mb()
        t0, cpu0 = time.perf_counter(), _cpu_s()
        opener: Any = gzip.open if path.endswith(".gz") else open
        with opener(path, "rb") as fh:
            doc = json.loads(fh.read())
        seconds = time.perf_counter() - t0
        extra = {"events": len(doc["traceEvents"])}
    elif tool == "gunzip":  # the floor's first half: the bytes, nothing decoded
        before = _rss_mb()
        t0, cpu0 = time.perf_counter(), _cpu_s()
        opener = gzip.open if path.endswith(".gz") else open
        size = 0
        with opener(path, "rb") as fh:
            while chunk := fh.read(1 << 22):
                size += len(chunk)
        seconds = time.perf_counter() - t0
        extra = {"bytes": size}
    elif tool == "msgspec":  # the fastest whole-document decode here: read all, msgspec.json.decode
        import msgspec

        before = _rss_mb()
        t0, cpu0 = time.perf_counter(), _cpu_s()
        opener = gzip.open if path.endswith(".gz") else open
        with opener(path, "rb") as fh:
            doc = msgspec.json.decode(fh.read())
        seconds = time.perf_counter() - t0
        extra = {"events": len(doc["traceEvents"])}
    elif tool == "hta":
        import logging

        logging.disable(logging.CRITICAL)
        from hta.trace_analysis import TraceAnalysis  # type: ignore[import-not-found]

        folder = Path(path).parent
        before = _rss_mb()
        t0, cpu0 = time.perf_counter(), _cpu_s()
        analysis = TraceAnalysis(trace_dir=str(folder))
        seconds = time.perf_counter() - t0
        extra = {"events": int(sum(len(df) for df in analysis.t.traces.values()))}
    else:
        raise SystemExit(f"unknown tool {tool}")
    extra["cpu_seconds"] = _cpu_s() - cpu0
    print(json.dumps({"seconds": seconds, "peak_rss_mb": _rss_mb(), "baseline_rss_mb": before, **extra}))


# --- synthetic traces -----------------------------------------------------------------
def replicate(src_: str | Path, times_: int | str, out_: str | Path) -> Path:
    """``times`` copies of every event, each copy shifted past the previous one in time and ids."""
    src, times, out = Path(src_), int(times_), Path(out_)
    if out.exists():
        return out
    with gzip.open(src, "rb") if src.suffix == ".gz" else open(src, "rb") as fh:
        doc = json.loads(fh.read())
    events = doc.pop("traceEvents")
    starts = [e["ts"] for e in events if isinstance(e.get("ts"), (int, float))]
    ends = [e["ts"] + e.get("dur", 0) for e in events if isinstance(e.get("ts"), (int, float))]
    span_ns = (int(max(ends) - min(starts)) + 1000) * 1000  # whole µs, so integer timestamps stay integers
    top = 0
    for e in events:
        args = e.get("args") or {}
        for key in ID_ARGS:
            if isinstance(args.get(key), int):
                top = max(top, args[key])
        if isinstance(e.get("id"), int):
            top = max(top, e["id"])
    offset = top + 1
    tmp = out.with_suffix(".tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write('{\n  "traceEvents": [\n')
        first = True
        for k in range(times):
            for e in events:
                if e.get("ph") == "M" and k:
                    continue
                copy = dict(e)
                ts = copy.get("ts")
                if isinstance(ts, (int, float)):  # shift in whole ns so that nesting survives exactly
                    copy["ts"] = (
                        (round(ts * 1000) + k * span_ns) / 1000 if isinstance(ts, float) else ts + k * span_ns // 1000
                    )
                if isinstance(copy.get("id"), int):
                    copy["id"] += k * offset
                if isinstance(copy.get("args"), dict):
                    args = dict(copy["args"])
                    for key in ID_ARGS:
                        if isinstance(args.get(key), int):
                            args[key] += k * offset
                    copy["args"] = args
                fh.write(("  " if first else ",\n  ") + json.dumps(copy))
                first = False
        fh.write("\n  ],\n")
        fh.write(",\n".join(f"  {json.dumps(key)}: {json.dumps(value)}" for key, value in doc.items()))
        fh.write("\n}\n")
    os.replace(tmp, out)
    return out


def _json_bytes(path: Path) -> int:
    if path.suffix != ".gz":
        return path.stat().st_size
    with gzip.open(path) as fh:
        return fh.seek(0, 2)


# --- the parent -----------------------------------------------------------------------
def measure(tool: str, path: Path, python: str, timeout: int) -> dict[str, Any]:
    cmd = [python, os.path.abspath(__file__), "--child", tool, str(path)]
    env = dict(os.environ)
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[1] / "src")
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, check=False)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout} s"}
    if done.returncode != 0:
        tail = (done.stderr.strip().splitlines() or ["killed"])[-1]
        return {"error": f"exit {done.returncode}: {tail[:200]}"}
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--child", nargs=2, metavar=("TOOL", "PATH"), help=argparse.SUPPRESS)
    ap.add_argument("--trace", type=Path, default=DEFAULT_TRACE)
    ap.add_argument("--scales", default="1,10,32", help="replication factors (1 = the real file as is)")
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/kernelscope-bench"))
    ap.add_argument("--hta-python", default="", help="python with HolisticTraceAnalysis installed ('' = skip HTA)")
    ap.add_argument(
        "--tools", default="kernelscope,json,gunzip,msgspec,hta", help="which loaders to measure (gunzip: bytes only)"
    )
    ap.add_argument("--timeout", type=int, default=1800)
    ap.add_argument("--json-out", type=Path, help="also write the results as JSON")
    ap.add_argument("--repeats", type=int, default=1, help="measure every tool this many times, round-robin")
    args = ap.parse_args()
    if args.child:
        child(*args.child)
        return
    if not args.trace.exists():
        raise SystemExit(f"{args.trace}: not found (pass --trace)")
    rows: list[dict[str, Any]] = []
    for scale in (int(s) for s in args.scales.split(",")):
        folder = args.workdir / f"x{scale}"
        folder.mkdir(parents=True, exist_ok=True)
        if scale == 1:
            path = folder / args.trace.name
            if not path.exists():
                path.symlink_to(args.trace.resolve())
        else:
            path = folder / f"{args.trace.name.split('.')[0]}_x{scale}.json"
            if not path.exists():  # in a child, so that this process stays small
                code = (
                    "import sys; sys.path.insert(0, sys.argv[1]); import bench_import as b; b.replicate(*sys.argv[2:])"
                )
                here = str(Path(__file__).resolve().parent)
                subprocess.run([sys.executable, "-c", code, here, str(args.trace), str(scale), str(path)], check=True)
        size_mb = _json_bytes(path) / 2**20
        wanted = set(args.tools.split(","))
        tools = [(t, sys.executable) for t in ("kernelscope", "json", "gunzip", "msgspec")]
        if args.hta_python:
            tools.append(("hta", args.hta_python))
        for repeat in range(args.repeats):  # round-robin: every tool once per repeat
            for tool, python in tools:
                if tool not in wanted:
                    continue
                result = measure(tool, path, python, args.timeout)
                row = {"scale": scale, "file": path.name, "json_mb": round(size_mb, 1), "tool": tool, **result}
                row["repeat"] = repeat
                rows.append(row)
                print(json.dumps(row), flush=True)
    print()
    print("| trace | JSON MB | tool | load s | peak RSS MB | RSS before load MB |")
    print("|---|---:|---|---:|---:|---:|")
    for r in rows:
        if "error" in r:
            print(f"| {r['file']} | {r['json_mb']} | {r['tool']} | {r['error']} | | |")
        else:
            print(
                f"| {r['file']} | {r['json_mb']} | {r['tool']} | {r['seconds']:.2f} | "
                f"{r['peak_rss_mb']:.0f} | {r['baseline_rss_mb']:.0f} |"
            )
    if args.repeats > 1:
        _ratios(rows)
    if args.json_out:
        args.json_out.write_text(json.dumps(rows, indent=1))


def _ratios(rows: list[dict[str, Any]]) -> None:
    """Medians over the repeats, (min-max), and kernelscope's ratios to HTA and to ``json.loads``."""
    import statistics

    def spread(values: list[float]) -> str:
        return f"{statistics.median(values):.2f} ({min(values):.2f}-{max(values):.2f})"

    print()
    print("| trace | tool | load s, median (min-max) | CPU s, median (min-max) | peak RSS MB, median (min-max) |")
    print("|---|---|---:|---:|---:|")
    med: dict[tuple[str, str], tuple[float, float, float]] = {}
    for file in dict.fromkeys(r["file"] for r in rows):
        for tool in dict.fromkeys(r["tool"] for r in rows):
            ok = [r for r in rows if r["file"] == file and r["tool"] == tool and "error" not in r]
            if not ok:
                continue
            secs, rss = [r["seconds"] for r in ok], [r["peak_rss_mb"] for r in ok]
            cpu = [r.get("cpu_seconds", float("nan")) for r in ok]
            med[(file, tool)] = (statistics.median(secs), statistics.median(cpu), statistics.median(rss))
            print(f"| {file} | {tool} | {spread(secs)} | {spread(cpu)} | {spread(rss)} |")
    for (file, tool), (secs, cpu, rss) in med.items():
        if tool != "kernelscope":
            continue
        for other in ("hta", "json", "msgspec", "gunzip"):
            if (file, other) in med:
                o_secs, o_cpu, o_rss = med[(file, other)]
                print(
                    f"{file}: kernelscope vs {other}: {o_secs / secs:.2f}x faster (wall), "
                    f"{o_cpu / cpu:.2f}x (CPU), peak RSS {rss / o_rss:.2f} of {other}'s"
                )


if __name__ == "__main__":
    main()
