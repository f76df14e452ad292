"""Run one benchmark mode in a fresh process: wall time, peak RSS (``wait4``), optional RSS samples.

Shared by ``bench_run.py`` and ``bench_hf.py``. The parent stays small (no torch, no numpy), so
the child's ``ru_maxrss`` from ``wait4`` (which on Linux starts at the parent's RSS at fork) is the
child's own peak.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]


def child_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The children import this checkout's kernelscope, not an installed one."""
    env = dict(os.environ, **(extra or {}))
    env["PYTHONPATH"] = str(REPO / "src") + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.setdefault("OMP_NUM_THREADS", "1")
    return env


def _vmrss_mb(pid: int) -> float | None:
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        return None
    return None


def run_measured(
    cmd: list[str], log: Path, sample_every: float = 0.0, env: dict[str, str] | None = None
) -> dict[str, Any]:
    """Run ``cmd`` (stdout+stderr to ``log``); wall time from spawn to exit, peak RSS, RSS samples."""
    samples: list[tuple[float, float]] = []
    with open(log, "wb") as out:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=child_env(env), cwd=REPO)
        stop = threading.Event()

        def poll() -> None:
            while not stop.wait(sample_every):
                rss = _vmrss_mb(proc.pid)
                if rss is not None:
                    samples.append((time.perf_counter() - t0, rss))

        poller = threading.Thread(target=poll, daemon=True) if sample_every > 0 else None
        if poller is not None:
            poller.start()
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        stop.set()
        proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        tail = log.read_text(errors="replace").strip().splitlines()[-5:]
        raise SystemExit(f"{' '.join(cmd)}: exit {proc.returncode}\n" + "\n".join(tail))
    return {
        "wall_s": wall,
        "peak_rss_mb": usage.ru_maxrss / 1024.0,
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "rss_samples": samples,
    }


def spread(values: list[float]) -> str:
    """``median (min-max)`` of a few repeats: how noisy the machine was."""
    if not values:
        return "-"
    return f"{statistics.median(values):.2f} ({min(values):.2f}-{max(values):.2f})"


def python() -> str:
    return sys.executable
