"""What a cross-rank analysis of one job finds: its slowest collectives, its straggler, each rank's
communication and the spread of lines and modules over ranks.

The SQL that finds it (DuckDB over a store's tables) is ``store.ranks``, a layer above; the advisor's
rules read a report through ``job_analysis``, which the package's front door (``kernelscope/__init__.py``)
sets to that SQL.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from ..model import Profile


@dataclass(frozen=True)
class Collective:
    name: str
    group: str
    seq: int  # seq_num when matched by it, else the position in the group
    by_seq: bool
    ranks: int  # ranks it was matched on
    skew_ns: int  # last arrival − first arrival
    first_rank: int
    last_rank: int
    line: str | None  # the launching line on the last rank


@dataclass(frozen=True)
class Excess:
    by: str
    key: str | None
    rank_ns: float  # the straggler's time
    median_ns: float  # the median rank's time
    extra_ns: float


@dataclass(frozen=True)
class Straggler:
    rank: int
    last_arrivals: int  # collectives it arrived last at
    collectives: int  # collectives matched on more than one rank
    extra_ns: float  # its summed kernel time above the median rank's
    excess: tuple[Excess, ...]  # by line and module, largest first


@dataclass(frozen=True)
class RankComm:
    rank: int
    total_ns: int
    computation_ns: int
    total_comm_ns: int
    exposed_comm_ns: int


@dataclass(frozen=True)
class Spread:
    by: str
    key: str | None
    min_ns: float
    median_ns: float
    max_ns: float
    max_rank: int
    imbalance: float  # (max − min) / median; 0 when even


@dataclass(frozen=True)
class RanksReport:
    ranks: tuple[int, ...]
    skipped: tuple[str, ...]
    collectives: int  # matched collectives
    matched_by_seq: bool
    top_skew: tuple[Collective, ...]
    straggler: Straggler | None
    comm: tuple[RankComm, ...]
    spread: tuple[Spread, ...]
    heatmap: dict[str, Any] = field(
        default_factory=dict
    )  # {"line"|"module": {"keys": [...], "rows": [[ns per key] per rank]}}
    left_out: tuple[int, ...] = ()  # ranks whose store files are damaged (--allow-partial), in ``skipped`` too

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["schema"] = 1
        return out


JobAnalysis = Callable[[Profile], "RanksReport | None"]
_JOB_ANALYSIS: list[JobAnalysis] = []


def use_job_analysis(analysis: JobAnalysis) -> None:
    """Make ``job_analysis`` run ``analysis`` (``store.ranks.analyze_profile``, when the store extra is there)."""
    _JOB_ANALYSIS[:] = [analysis]


def job_analysis(merged: Profile) -> RanksReport | None:
    """The cross-rank analysis of a merged profile; None without one set (or for one rank)."""
    return _JOB_ANALYSIS[0](merged) if _JOB_ANALYSIS else None
