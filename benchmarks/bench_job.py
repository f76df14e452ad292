"""A whole job through ``import --store``: 256 synthesised ranks on 1 and 2 local Dask workers, and HTA.

    python benchmarks/bench_job.py --ranks 256 --workdir /tmp/ks-job
    python benchmarks/bench_job.py --ranks 256 --workdir /tmp/ks-job --hta-python /tmp/htaenv/bin/python

The job is made by ``synth_job.py`` (once; reused when ``WORKDIR/ranks`` exists). Each import runs in a
fresh subprocess and reports its wall time, every Dask worker's peak RSS (``ru_maxrss`` read on the worker
when the import ended) and the client's own peak RSS (it merges the ranks into ``merged.ksprof``).
``kernelscope ranks`` is then timed on the store and must name the planted straggler and slow collective.
HTA's ``TraceAnalysis(trace_dir=...)`` (its own multiprocessing pool) is run on the same folder with a time
limit, when an interpreter with HolisticTraceAnalysis installed is given.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent

_IMPORT = """
import json, resource, sys, time
from kernelscope.store.job import import_job
if __name__ == "__main__":
    t = time.perf_counter()
    r = import_job([{paths}], {store!r}, workers={workers})
    wall = time.perf_counter() - t
    print(json.dumps({{"wall_s": wall, "workers": r.workers, "worker_peak_mb": sorted(v / 1024 for v in r.peak_rss_kb.values()),
        "client_peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, "ranks": len(r.manifest.ranks),
        "skipped": len(r.manifest.skipped)}}))
"""

_HTA = """
import json, resource, time
from hta.trace_analysis import TraceAnalysis
if __name__ == "__main__":
    t = time.perf_counter()
    a = TraceAnalysis(trace_dir={folder!r})
    wall = time.perf_counter() - t
    kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(json.dumps({{"wall_s": wall, "ranks": len(a.t.traces), "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "largest_child_peak_mb": kids}}))
"""


def _run(code: str, python: str, timeout: float) -> dict[str, Any]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(HERE.parent / "src") + os.pathsep + env.get("PYTHONPATH", "")
    t = time.perf_counter()
    try:
        proc = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return {"error": f"did not finish in {timeout:.0f} s"}
    if proc.returncode != 0:
        return {"error": (proc.stderr.strip().splitlines() or ["?"])[-1][:300], "wall_s": time.perf_counter() - t}
    out: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ranks", type=int, default=256)
    ap.add_argument("--workdir", default="/tmp/ks-job")
    ap.add_argument("--workers", default="1,2")
    ap.add_argument("--hta-python", default="")
    ap.add_argument("--hta-timeout", type=float, default=1200.0)
    ap.add_argument("--json-out", default="")
    args = ap.parse_args()
    work = Path(args.workdir)
    ranks_dir = work / "ranks"
    results: dict[str, Any] = {"ranks": args.ranks}
    if not ranks_dir.exists():
        t = time.perf_counter()
        subprocess.run(
            [sys.executable, str(HERE / "synth_job.py"), "--ranks", str(args.ranks), "--out", str(ranks_dir)],
            check=True,
            stdout=subprocess.DEVNULL,
            env={**os.environ, "PYTHONPATH": str(HERE.parent / "src")},
        )
        results["synth_s"] = time.perf_counter() - t
    truth = json.loads(Path(str(ranks_dir) + ".planted.json").read_text())
    files = sorted(str(p) for p in ranks_dir.glob("rank-*.json.gz"))
    results["input_mb"] = sum(os.path.getsize(f) for f in files) / 2**20
    for w in [int(x) for x in args.workers.split(",")]:
        store = work / f"store-{w}"
        shutil.rmtree(store, ignore_errors=True)
        code = _IMPORT.format(paths=", ".join(repr(f) for f in files), store=str(store), workers=w)
        r = _run(code, sys.executable, 3600)
        print(f"import on {w} worker(s): {r}", flush=True)
        results[f"import_{w}"] = r
    store = work / f"store-{args.workers.split(',')[-1]}"
    t = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "kernelscope", "ranks", str(store), "--json"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(HERE.parent / "src")},
        check=True,
    )
    results["ranks_s"] = time.perf_counter() - t
    report = json.loads(proc.stdout)
    slow = report["top_skew"][0]
    line = next(e for e in report["straggler"]["excess"] if e["by"] == "line")
    results["found"] = {
        "straggler_rank": report["straggler"]["rank"],
        "straggler_line": line["key"],
        "slow_collective": [slow["name"], slow["seq"], slow["last_rank"], slow["skew_ns"]],
    }
    results["planted"] = {
        "straggler_rank": truth["straggler"]["rank"],
        "straggler_line": truth["straggler"]["line"],
        "slow_collective": [truth["slow_collective"]["index"], truth["slow_collective"]["late_rank"]],
    }
    print(json.dumps(results["found"]), json.dumps(results["planted"]), flush=True)
    if args.hta_python:
        results["hta"] = _run(_HTA.format(folder=str(ranks_dir)), args.hta_python, args.hta_timeout)
        print(f"HTA: {results['hta']}", flush=True)
    print(json.dumps(results, indent=1))
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
