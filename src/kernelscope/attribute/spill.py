"""Sorted runs on disk and their windowed merge: per-event tables that do not stay in memory.

A ``RunStore`` collects fixed-width int64 records in one ``array('q')``. Once it holds ``run_rows``
records it sorts them (stably) and writes them to a file in a temporary directory: a *run*. Reading
merges the runs window by window: each window is every record whose key lies in a range, taken
from every run (a binary search per run, reading single keys with ``pread``), concatenated in run
order and sorted again (stably), so the records come out in exactly the order one stable in-memory
sort of all of them would give. Runs are read with ``pread``, never mapped: the page cache holds
them, the process's RSS does not (a mapping's page faults map whole page-cache folios, several MB
per run per window on recent kernels, which made RSS grow with the number of runs).

A trace small enough that the store never fills keeps its single run in memory: no files at all.
"""

from __future__ import annotations

import array
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator

import numpy as np
import numpy.typing as npt

I64 = npt.NDArray[np.int64]

RUN_ROWS = 1 << 17  # records per run: the in-memory buffer (x 8 bytes x width)
WINDOW_ROWS = 1 << 16  # records per merge window, across all runs
MIN_STEP = 1024  # records per run per window, at least (many runs: windows a little over WINDOW_ROWS)


class TempArea:
    """A temporary directory made on first use, removed by ``close()``."""

    def __init__(self) -> None:
        self._dir: str | None = None
        self._n = 0

    def path(self, stem: str) -> str:
        if self._dir is None:
            self._dir = tempfile.mkdtemp(prefix="kernelscope-import-")
        self._n += 1
        return os.path.join(self._dir, f"{stem}-{self._n}.bin")

    def close(self) -> None:
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None


class _Run:
    """One sorted run: in memory (``data``), or a file read with ``pread`` (not mapped: a mapping's
    page faults map whole page-cache folios into the process, which then count in its RSS)."""

    def __init__(self, data: I64, fd: int | None = None, rows: int = 0) -> None:
        self.data = data  # the records when in memory; empty (0, width) when on disk
        self.fd = fd
        self.width = data.shape[1]
        self.n = rows if fd is not None else len(data)
        self.groups: dict[int, tuple[int, int]] = {}

    def __len__(self) -> int:
        return self.n

    def key_at(self, j: int, key: int) -> int:
        if self.fd is None:
            return int(self.data[j, key])
        raw = os.pread(self.fd, 8, (j * self.width + key) * 8)
        return int(np.frombuffer(raw, dtype=np.int64)[0])

    def rows(self, a: int, b: int) -> I64:
        """Records ``a:b``, as a fresh writable copy."""
        if self.fd is None:
            return np.array(self.data[a:b])
        out = np.empty((b - a, self.width), dtype=np.int64)
        view = out.data.cast("B")
        offset, done = a * self.width * 8, 0
        while done < len(view):
            got = os.preadv(self.fd, [view[done:]], offset + done)
            if got <= 0:
                raise OSError(f"short read from a spilled run ({done} of {len(view)} bytes)")
            done += got
        return out

    def close(self) -> None:
        self.data = np.zeros((0, self.width), np.int64)
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


class RunStore:
    """Records of ``width`` int64 fields; ``sort_order(records)`` gives the (stable) order of a run.

    ``group`` (a field index) is the leading sort field by which records are read back one group at
    a time (``window(group=g)``), ``key`` the field within which windows are cut.
    """

    def __init__(
        self,
        width: int,
        sort_order: Callable[[I64], npt.NDArray[np.intp]],
        key: int,
        temp: TempArea,
        stem: str,
        group: int | None = None,
        run_rows: int | None = None,
    ) -> None:
        self.width = width
        self.data = array.array("q")  # the filling buffer: callers ``extend`` it, then call ``maybe_spill``
        self._sort_order = sort_order
        self._key = key
        self._group = group
        self._temp = temp
        self._stem = stem
        self._run_rows = run_rows if run_rows is not None else RUN_ROWS
        self.runs: list[_Run] = []
        self._spilled_rows = 0
        self._finished = False

    def __len__(self) -> int:
        return self._spilled_rows + len(self.data) // self.width

    @property
    def spilled(self) -> bool:
        return any(r.fd is not None for r in self.runs)

    def maybe_spill(self) -> None:
        if len(self.data) >= self._run_rows * self.width:
            self._spill()

    def add_array(self, records: I64) -> None:
        """Append many records (an (n, width) array), spilling as runs fill."""
        step = max(self._run_rows, 1)
        for lo in range(0, len(records), step):
            self.data.frombytes(np.ascontiguousarray(records[lo : lo + step], dtype=np.int64).tobytes())
            self.maybe_spill()

    def _records(self) -> I64:
        return np.frombuffer(self.data, dtype=np.int64).reshape(-1, self.width)

    def _sorted(self) -> I64:
        records = self._records()
        return records[self._sort_order(records)]

    def _spill(self) -> None:
        if not len(self.data):
            return
        records = self._sorted()
        path = self._temp.path(self._stem)
        with open(path, "wb") as fh:
            records.tofile(fh)
        n = len(records)
        groups = self._groups(records)
        del records
        self.data = array.array("q")
        run = _Run(np.zeros((0, self.width), np.int64), os.open(path, os.O_RDONLY), n)
        run.groups = groups
        self.runs.append(run)
        self._spilled_rows += n

    def _groups(self, records: I64) -> dict[int, tuple[int, int]]:
        if self._group is None or not len(records):
            return {}
        col = records[:, self._group]
        values, first = np.unique(col, return_index=True)
        ends = np.append(first[1:], len(col))
        return {
            int(v): (int(a), int(b)) for v, a, b in zip(values.tolist(), first.tolist(), ends.tolist(), strict=True)
        }

    def finish(self) -> None:
        """No more records: the last run is written (or, when nothing was spilled, kept in memory)."""
        if self._finished:
            return
        self._finished = True
        if self.runs:
            self._spill()
        elif len(self.data):
            records = self._sorted()
            run = _Run(records)
            run.groups = self._groups(records)
            self.runs.append(run)
            self._spilled_rows += len(records)
            self.data = array.array("q")

    def groups(self) -> set[int]:
        out: set[int] = set()
        for run in self.runs:
            out.update(run.groups)
        return out

    def windows(self, group: int | None = None, window_rows: int | None = None) -> Iterator[I64]:
        """The records (of ``group``) in sort order, as unsorted-within-window copies: sort each by the
        fields after the group, stably (runs are concatenated in run order)."""
        self.finish()
        runs = self.runs
        if group is None:
            lo = [0] * len(runs)
            hi = [len(r) for r in runs]
        else:
            bounds = [r.groups.get(group, (0, 0)) for r in runs]
            lo = [a for a, _b in bounds]
            hi = [b for _a, b in bounds]
        window = window_rows if window_rows is not None else WINDOW_ROWS
        yield from _windows(runs, lo, hi, self._key, window)

    def close(self) -> None:
        for run in self.runs:
            run.close()
        self.runs = []
        self.data = array.array("q")


def _first_at_least(run: _Run, key: int, lo: int, hi: int, value: int, right: bool) -> int:
    """Binary search on a run's sorted key field, reading single values: bisect_left/right."""
    while lo < hi:
        mid = (lo + hi) // 2
        v = run.key_at(mid, key)
        if v < value or (right and v == value):
            lo = mid + 1
        else:
            hi = mid
    return lo


def _windows(runs: list[_Run], lo: list[int], hi: list[int], key: int, window: int) -> Iterator[I64]:
    pos = list(lo)
    while True:
        active = [r for r in range(len(runs)) if pos[r] < hi[r]]
        if not active:
            return
        step = max(window // len(active), MIN_STEP)
        bound: int | None = None
        for r in active:
            j = pos[r] + step
            if j < hi[r]:
                v = runs[r].key_at(j, key)
                if bound is None or v < bound:
                    bound = v
        ends = list(pos)
        if bound is None:  # every run ends within this window
            for r in active:
                ends[r] = hi[r]
        else:
            for r in active:
                ends[r] = _first_at_least(runs[r], key, pos[r], hi[r], bound, False)
            if all(ends[r] == pos[r] for r in active):  # a run of equal keys longer than a step: take it whole
                for r in active:
                    ends[r] = _first_at_least(runs[r], key, pos[r], hi[r], bound, True)
        parts = [runs[r].rows(pos[r], ends[r]) for r in active if ends[r] > pos[r]]
        for r in active:
            pos[r] = ends[r]
        yield parts[0] if len(parts) == 1 else np.concatenate(parts)
