"""Synthesise a whole job (N ranks) from one real rank trace, with a planted straggler and slow collective.

Every rank is a copy of the trace with its own time shifts, as if the ranks had run in lock step:

* the trace's communication kernels (found by kernelscope's own import) split time into segments;
  at each collective every rank arrives with its own lateness (a random jitter of up to ``--jitter-us``,
  plus what was planted), the collective ends for everybody when the last rank arrived, and the
  next segment starts for all ranks together (the early ranks' collective kernels last longer: they wait);
* **the straggler** (``--straggler``): every kernel launched from the trace's busiest source line
  runs ``--slowdown`` times longer on that rank, so it arrives late at the collectives after them;
* **the slow collective** (``--slow-collective K --late-rank L``): rank L arrives ``--late-ms`` late at
  collective K (a host hiccup before it), so that collective's skew is far above the others.

Each rank's ``distributedInfo.rank`` is set, at the head of the file where HTA looks for it; the truth is
written to ``OUT.planted.json`` (beside the folder, not in it).
Clocks are shared (no per-rank clock offset): the skews are the planted ones.

    python benchmarks/synth_job.py --ranks 256 --out /tmp/job256
    python benchmarks/synth_job.py --ranks 8 --out /tmp/job8 --straggler 5 --late-rank 2
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import msgspec
import numpy as np

DEFAULT_TRACE = (
    Path(__file__).resolve().parents[1].parent
    / "shared"
    / "traces"
    / "tracelens_b200_vllm_tp8_rank0_compiled_nccl.json.gz"
)


def _plan(trace: str) -> dict[str, Any]:
    """What kernelscope sees in the base trace: the collectives and the busiest line's kernels."""
    from kernelscope.importers import import_file
    from kernelscope.model.timeline import Category
    from kernelscope.store.keys import node_keys

    profile = import_file(trace)
    tl = profile.timeline
    assert tl is not None
    lines = node_keys(profile, "line")
    modules = node_keys(profile, "module")
    comm = np.flatnonzero(tl.category == int(Category.COMM))
    comm = comm[np.argsort(tl.start_ns[comm], kind="stable")]
    kern = np.flatnonzero(tl.category == int(Category.KERNEL))
    by_line: Counter[str] = Counter()
    for r in kern.tolist():
        key = lines[int(tl.node[r])]
        if key is not None:
            by_line[key] += int(tl.dur_ns[r])
    target = by_line.most_common(1)[0][0]
    slowed = [r for r in kern.tolist() if lines[int(tl.node[r])] == target]
    mods: Counter[str] = Counter()
    for r in slowed:
        m = modules[int(tl.node[r])]
        if m is not None:
            mods[m] += int(tl.dur_ns[r])
    names = [profile.frame_of(int(tl.node[r])).name for r in comm.tolist()]
    return {
        "comm_corr": [int(c) for c in tl.correlation[comm]],
        "comm_names": names,
        "comm_tracks": [tl.tracks[int(t)].name for t in tl.track[comm]],
        "slowed_corr": {int(tl.correlation[r]) for r in slowed},
        "line": target,
        "modules": [m for m, _ in mods.most_common()],
    }


def synthesise(
    trace: str,
    out: str,
    ranks: int,
    straggler: int,
    slowdown: float,
    slow_collective: int,
    late_rank: int,
    late_ms: float,
    jitter_us: float,
    seed: int = 0,
) -> dict[str, Any]:
    plan = _plan(trace)
    with gzip.open(trace, "rb") as fh:
        doc = json.loads(fh.read())
    events: list[dict[str, Any]] = doc["traceEvents"]
    timed = [e for e in events if isinstance(e.get("ts"), (int, float))]
    ts = np.asarray([float(e["ts"]) for e in timed])
    dur = np.asarray([float(e.get("dur", 0) or 0) for e in timed])
    corr = np.asarray(
        [
            int(e["args"].get("correlation", -1))
            if e.get("cat") == "kernel" and isinstance(e.get("args"), dict)
            else -1
            for e in timed
        ]
    )
    # the collectives, in the base trace's order: their kernel events and where each segment ends
    pos = {int(c): i for i, c in enumerate(corr.tolist()) if c >= 0}
    coll = np.asarray([pos[c] for c in plan["comm_corr"] if c in pos], dtype=np.int64)
    n_coll = len(coll)
    if not 0 <= slow_collective < n_coll:
        raise SystemExit(f"--slow-collective must be below the trace's {n_coll} collectives")
    ends = ts[coll] + dur[coll]
    seg = np.searchsorted(ends, ts, side="right")  # segment c: after collective c-1 ended, up to c's end
    seg_start = np.concatenate([[-np.inf], ends])
    slowed = np.isin(corr, np.fromiter(plan["slowed_corr"], dtype=np.int64)) & (corr >= 0)
    extra = np.where(slowed, dur * (slowdown - 1.0), 0.0)
    # straggler's extra time before each event within its own segment (kernels that started before it)
    order = np.argsort(ts[slowed], kind="stable")
    s_ts, s_extra = ts[slowed][order], np.cumsum(extra[slowed][order])

    def cum_before(x: np.ndarray) -> np.ndarray:
        i = np.searchsorted(s_ts, x, side="left")
        return np.where(i > 0, s_extra[np.maximum(i - 1, 0)], 0.0)

    straggler_local = cum_before(ts[coll]) - cum_before(seg_start[:n_coll])  # at each collective's start
    rng = np.random.default_rng(seed)
    jitter = rng.uniform(0.0, jitter_us, size=(ranks, n_coll + 1))
    local = jitter[:, :n_coll].copy()  # each rank's lateness at each collective
    local[straggler] += straggler_local
    local[late_rank, slow_collective] += late_ms * 1000.0
    last = local.max(axis=0)
    shift_after = np.concatenate([[0.0], np.cumsum(last)])  # where segment c starts for everybody
    coll_index = np.arange(n_coll)
    os.makedirs(out, exist_ok=True)
    end = ts + dur
    seg_s, seg_e = np.minimum(seg, n_coll), np.minimum(np.searchsorted(ends, end, side="right"), n_coll)
    in_s = cum_before(ts) - cum_before(seg_start[seg_s])
    in_e = cum_before(end) - cum_before(seg_start[seg_e])
    enc = msgspec.json.Encoder()
    info = dict(doc.pop("distributedInfo", None) or {})
    for r in range(ranks):
        # one non-decreasing time map per rank, applied to starts and ends alike: nesting is kept
        f_s = shift_after[seg_s] + jitter[r, seg_s]
        f_e = shift_after[seg_e] + jitter[r, seg_e]
        if r == straggler:
            f_s, f_e = f_s + in_s, f_e + in_e
        if r == late_rank:
            f_s = f_s + np.where(seg_s == slow_collective, late_ms * 1000.0, 0.0)
            f_e = f_e + np.where(seg_e == slow_collective, late_ms * 1000.0, 0.0)
        new_ts, new_end = ts + f_s, end + f_e
        # collective kernels: start when this rank arrives, end when the last rank did (+ their own time)
        new_ts[coll] = ts[coll] + shift_after[coll_index] + local[r]
        new_end[coll] = end[coll] + shift_after[coll_index] + last
        new_dur = np.maximum(new_end - new_ts, 0.0)
        for i, e in enumerate(timed):
            e["ts"] = round(float(new_ts[i]), 3)
            if "dur" in e:
                e["dur"] = round(float(new_dur[i]), 3)
        info.update({"rank": r, "world_size": ranks})
        body = enc.encode(doc)
        with gzip.open(os.path.join(out, f"rank-{r}.json.gz"), "wb", compresslevel=1) as fh:
            # first, on a line of its own, with a space after the colons: HTA finds a file's rank with the
            # regex '"rank":\s+(\d+)' over the file's first lines, and reads every other file as rank 0
            fh.write(b'{"distributedInfo": ' + json.dumps(info).encode() + (b",\n" if len(body) > 2 else b"\n"))
            fh.write(body[1:])
    truth = {
        "base": os.path.abspath(trace),
        "ranks": ranks,
        "collectives": n_coll,
        "straggler": {"rank": straggler, "line": plan["line"], "modules": plan["modules"], "slowdown": slowdown},
        "slow_collective": {
            "index": slow_collective,
            "kernel": plan["comm_names"][slow_collective],
            "group": plan["comm_tracks"][slow_collective],
            "late_rank": late_rank,
            "late_ms": late_ms,
        },
    }
    with open(out.rstrip("/") + ".planted.json", "w", encoding="utf-8") as fh:
        json.dump(truth, fh, indent=1)
    return truth


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trace", default=str(DEFAULT_TRACE))
    ap.add_argument("--out", required=True)
    ap.add_argument("--ranks", type=int, default=256)
    ap.add_argument("--straggler", type=int, default=None, help="default: ranks * 2 // 3")
    ap.add_argument("--slowdown", type=float, default=1.5)
    ap.add_argument("--slow-collective", type=int, default=None, help="default: the middle one")
    ap.add_argument("--late-rank", type=int, default=None, help="default: ranks // 3")
    ap.add_argument("--late-ms", type=float, default=5.0)
    ap.add_argument("--jitter-us", type=float, default=20.0)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    if not os.path.exists(args.trace):
        print(f"{args.trace}: no such trace", file=sys.stderr)
        return 2
    straggler = args.straggler if args.straggler is not None else args.ranks * 2 // 3
    late = args.late_rank if args.late_rank is not None else args.ranks // 3
    k = args.slow_collective
    if k is None:
        k = len(_plan(args.trace)["comm_corr"]) // 2
    truth = synthesise(
        args.trace, args.out, args.ranks, straggler, args.slowdown, k, late, args.late_ms, args.jitter_us, args.seed
    )
    print(json.dumps(truth, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
