"""Native sampling (``run --native``, ``profile(native=True)``): the program's native stacks, read from
outside by py-spy while it runs, placed under the ops and lines of the recorded windows.

- spy.py runs py-spy (``record --native``) on this process from the session's start to its end;
- each folded window hands its op intervals and their nodes here (``NativeSampling.window``, from
  torch_fold.py); nothing else in the collector changes, and without ``native`` nothing is handed;
- at the end chrome.py reads py-spy's trace, align.py puts it on torch's clock, place.py puts each sample
  under the op (or line) that ran at that instant, and layers.py names the layer of host software it was in.

Only samples of the thread that records (the program's main thread: the one torch ops are recorded on) are
placed; samples taken outside the recorded windows are dropped and counted.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from typing import Any

import numpy as np

from ...model import ProfileBuilder
from .align import ANY_OP, EARLY_NS, Alignment, fit_offset, op_names_of
from .chrome import read_segments
from .layers import KERNEL_PREFIX, sample_layer
from .marks import bounds, phase_of, run_marks
from .place import MIN_SAMPLES, apply, flatten, native_part, place
from .spy import RATE_DEFAULT, Spy, SpyUnavailable

__all__ = ["MIN_SAMPLES", "RATE_DEFAULT", "NativeSampling"]

STAMP_NS = 5_000_000  # the most py-spy is taken to need between taking a sample and stamping it


class NativeSampling:
    def __init__(self, rate: int = RATE_DEFAULT, pid: int | None = None) -> None:
        import os

        self.rate = rate
        self.thread = threading.get_native_id()
        self.real_minus_mono = time.time_ns() - time.monotonic_ns()
        self.spans: list[tuple[int, int, int]] = []
        self.windows: list[tuple[int, int]] = []
        self.failure = ""
        self.marks: list[int] = []
        self.clock_from = ""
        self.spy: Spy | None = None
        try:
            self.spy = Spy(pid if pid is not None else os.getpid(), rate)
        except (SpyUnavailable, OSError) as exc:
            self.failure = str(exc)
            return
        # py-spy reads every loaded library's symbols before its first sample (seconds with torch loaded):
        # the program waits for it, so that what it records is sampled from its start
        if not self.spy.wait_ready():
            self.spy.stop()
            self.failure = self.spy.failure
            self.spy.cleanup()
            self.spy = None
            return
        self.marks = run_marks()

    @property
    def on(self) -> bool:
        return self.spy is not None

    def window(self, spans: list[tuple[int, int, int, int]]) -> None:
        """One folded window's ops: (node, thread index, start ns, end ns). Only the thread with the most ops
        (the recording thread's) is kept."""
        if not spans or self.spy is None:
            return
        per = Counter(s[1] for s in spans)
        main = per.most_common(1)[0][0]
        mine = [(s[2], s[3], s[0]) for s in spans if s[1] == main]
        self.spans.extend(mine)
        self.windows.append((min(s[0] for s in mine), max(s[1] for s in mine)))

    def finish(self, builder: ProfileBuilder, device_run: bool) -> tuple[dict[str, Any], str]:
        """Stop py-spy and put its samples in the tree; returns the profile's ``native`` metadata and the one
        line the header shows."""
        meta: dict[str, Any] = {"rate": self.rate, "min_samples": MIN_SAMPLES}
        spy = self.spy
        if spy is None:
            meta["unavailable"] = self.failure
            return meta, f"native sampling unavailable: {self.failure}"
        try:
            spy.wait_ready(0.0)
            path = spy.stop()
            if path is None or spy.ready_ns is None:
                meta["unavailable"] = spy.failure
                return meta, f"native sampling unavailable: {spy.failure}"
            try:
                segments = read_segments(path)
            except (OSError, ValueError) as exc:
                meta["unavailable"] = f"py-spy's samples could not be read ({exc})"
                return meta, f"native sampling unavailable: {meta['unavailable']}"
        finally:
            spy.cleanup()
        return self._place(segments, spy, builder, device_run, meta)

    def _place(
        self, segments: list[Any], spy: Spy, builder: ProfileBuilder, device_run: bool, meta: dict[str, Any]
    ) -> tuple[dict[str, Any], str]:
        mine = [s for s in segments if s.os_tid == self.thread]
        others = len({s.os_tid for s in segments} - {self.thread})
        flat = flatten(self.spans, self.windows)
        alignment = self._align(segments, mine, flat, builder, spy)
        placed = place(mine, flat, alignment.offset_ns, builder)
        applied = apply(placed, builder, self.rate, device_run)
        interval_ns = 1e9 / self.rate
        meta.update(
            {
                "samples": spy.samples,
                # what py-spy spent reading stacks while the program was stopped for it: on an idle machine
                # about the time each sample holds the program (a busy one adds the wait for a core)
                "sampler_cpu_seconds": round(spy.sampling_cpu, 3),
                "sampler_ms_per_sample": round(1e3 * spy.sampling_cpu / max(1.0, spy.sampling_seconds * self.rate), 3),
                "errors": spy.errors,
                "threads_not_placed": others,
                "samples_in_ops": round(placed.in_ops_ns / interval_ns),
                "samples_between_ops": round(placed.between_ops_ns / interval_ns),
                "samples_outside_windows": round(placed.outside_windows_ns / interval_ns),
                "samples_in_kernelscope": round(placed.own_ns / interval_ns),
                "ops_split": applied.split_ops,
                "ops_below_min_samples": applied.thin_ops,
                "clock": {
                    "offset_ns": alignment.offset_ns,
                    "matched": alignment.matched,
                    "informative": alignment.informative,
                    "searched_ms": alignment.bound_ns / 1e6,
                    "bounded_by": self.clock_from,
                },
            }
        )
        line = (
            f"native samples: {spy.samples} stacks (all threads, whole run) at {self.rate}/s (py-spy, from outside; "
            f"{meta['sampler_ms_per_sample']:.1f} ms of its CPU a sample, the program stopped meanwhile): "
            f"~{meta['samples_in_ops']} in ops, ~{meta['samples_between_ops']} between ops (Python / interpreter), "
            f"~{meta['samples_in_kernelscope']} in kernelscope's hooks (left out), "
            f"~{meta['samples_outside_windows']} outside the recorded windows; ops split where they have "
            f">= {MIN_SAMPLES} samples ({applied.split_ops} ops; {applied.thin_ops} with fewer left whole); "
            f"clock: bounded by {self.clock_from} to {alignment.bound_ns / 1e6:.1f} ms, fitted on {alignment.matched} of "
            f"{alignment.informative} samples naming their op"
        )
        return meta, line

    def _align(self, segments: list[Any], mine: list[Any], flat: Any, builder: ProfileBuilder, spy: Spy) -> Alignment:
        assert spy.ready_ns is not None
        first: dict[int, int] = {}
        for s in mine:
            k = next((phase_of(f.name) for f in reversed(s.stack) if f.python and phase_of(f.name) is not None), None)
            if k is not None and k not in first:
                first[k] = s.start_us
        marked = bounds(self.marks, first, STAMP_NS)
        if marked is not None:
            self.clock_from = f"clock marks ({len(first)} phases sampled)"
            low, high = marked[0] + self.real_minus_mono - STAMP_NS, marked[1] + self.real_minus_mono
        else:  # (no mark sampled: bounded by py-spy's ready line alone)
            self.clock_from = "py-spy's start alone"
            first_us = min((s.start_us for s in segments), default=0)
            ready = spy.ready_ns + self.real_minus_mono
            low = ready - first_us * 1000 - EARLY_NS
            high = ready - first_us * 1000 + int(10e9 / self.rate) + EARLY_NS
        names: dict[str, int] = {}
        seg_name = np.asarray(
            [
                names.setdefault(builder.frame_of(int(n)).name, len(names))  # (ops, and compiled kernels placed)
                for n in flat.node
            ],
            dtype=np.int64,
        )
        times: list[int] = []
        ids: list[tuple[int, ...]] = []
        for s in mine:
            native = native_part(s.stack)
            ops = op_names_of([f.name for f in native])
            known = tuple(names[o] for o in ops if o in names)
            if not known and sample_layer([(f.name, f.file) for f in native]).startswith(KERNEL_PREFIX):
                known = (ANY_OP,)
            if known:
                times.append(s.start_us)
                ids.append(known)
        return fit_offset(np.asarray(times, dtype=np.int64), ids, flat.start, flat.end, seg_name, low, high)
