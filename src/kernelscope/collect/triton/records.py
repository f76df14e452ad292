"""What the interpreter inspector records: launches, their tensor arguments, and one record per memory op."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

Program = tuple[int, int, int]

LOAD = "load"
STORE = "store"
ATOMIC = "atomic"
DOT = "dot"


@dataclass(frozen=True)
class ArgInfo:
    """A tensor argument of a launch: where its elements and its whole storage lie (byte addresses)."""

    name: str
    base: int  # address of element 0 of the tensor (storage offset included)
    storage_lo: int
    storage_hi: int  # one past the storage's last byte
    itemsize: int
    shape: tuple[int, ...]
    dtype: str

    def contains(self, addr: npt.NDArray[np.uint64], size: int) -> npt.NDArray[np.bool_]:
        """Which addresses hold ``size`` bytes inside this argument's storage."""
        a = addr.astype(np.int64)
        return (a >= self.storage_lo) & (a + size <= self.storage_hi)


@dataclass(frozen=True)
class Launch:
    index: int
    kernel: str
    kernel_file: str  # where the kernel is defined
    file: str  # the user line that launched it
    line: int
    grid: Program
    args: tuple[ArgInfo, ...]
    callers: tuple[tuple[str, int], ...] = ()  # the user lines above the launch line, innermost first

    @property
    def programs(self) -> int:
        return self.grid[0] * self.grid[1] * self.grid[2]

    def linear(self, program: Program) -> int:
        return (program[0] * self.grid[1] + program[1]) * self.grid[2] + program[2]

    def program_of(self, linear: int) -> Program:
        yz = self.grid[1] * self.grid[2]
        return (linear // yz, (linear // self.grid[2]) % self.grid[1], linear % self.grid[2])

    def arg(self, name: str) -> ArgInfo | None:
        return next((a for a in self.args if a.name == name), None)


@dataclass(frozen=True, eq=False)
class Access:
    """One load, store, atomic or ``tl.dot`` executed by one program.

    ``lanes`` is the block's element count, ``active`` the lanes its mask lets through; ``oob`` of those
    fall outside the argument's storage (``oob_first``: the first such element offset from the tensor's
    start). ``sectors`` counts the distinct 32-byte memory sectors the in-bounds lanes touch and
    ``min_sectors`` the fewest that could hold the same bytes. ``elements`` holds the element offsets
    (from the tensor's start) of the in-bounds active lanes of stores and atomics, for race detection.
    """

    launch: int
    program: Program
    op: str
    file: str
    line: int
    arg: str | None
    itemsize: int = 0
    lanes: int = 0
    active: int = 0
    oob: int = 0
    oob_first: int = 0
    sectors: int = 0
    min_sectors: int = 0
    elements: npt.NDArray[np.int64] | None = None
    dot_shape: tuple[int, int, int] | None = None  # M, N, K
