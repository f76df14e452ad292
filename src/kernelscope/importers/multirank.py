"""Several traces of one job (one per rank): parallel import and a merged profile.

``import_ranks`` imports files in worker processes (each import is single-threaded Python, so
processes are what scale); ``merge_ranks`` puts each rank's tree under a ``rank R`` scope,
prefixes its timeline devices with ``rank R/`` and lists the ranks in the metadata.

A file's rank is ``distributedInfo.rank``, else a ``rank-N``/``rank_N``/``rankN`` pattern in its
file name, else its position on the command line; when two files claim the same rank, positions
are used for all of them.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from typing import Any

import numpy as np

from ..model import STANDARD_METRICS, Frame, Profile, ProfileBuilder, Timeline, Track
from ..model.devices import devices_of
from .registry import import_file

__all__ = ["import_ranks", "merge_ranks", "rank_of", "ranks_of"]

_RANK_IN_NAME = re.compile(r"rank[-_]?(\d+)", re.I)


def rank_of(path: str, profile: Profile) -> int | None:
    rank = profile.metadata.get("rank")
    if type(rank) is int and rank >= 0:
        return rank
    m = _RANK_IN_NAME.search(os.path.basename(path))
    return int(m.group(1)) if m else None


def ranks_of(paths: Sequence[str], profiles: Sequence[Profile]) -> list[int]:
    found = [rank_of(p, prof) for p, prof in zip(paths, profiles, strict=True)]
    if any(r is None for r in found) or len(set(found)) != len(found):
        return list(range(len(paths)))
    return [int(r) for r in found if r is not None]


def import_ranks(paths: Sequence[str], workers: int = 2) -> list[Profile]:
    """Import every file (BadInputError from any file propagates); results in the order given."""
    if len(paths) <= 1 or workers <= 1:
        return [import_file(p) for p in paths]
    with ProcessPoolExecutor(max_workers=min(workers, len(paths))) as pool:
        return list(pool.map(import_file, paths))


def merge_ranks(profiles: Sequence[Profile], ranks: Sequence[int] | None = None) -> Profile:
    """One profile with each rank's tree under ``[rank R]``; metrics, timeline and metadata combined."""
    if ranks is None:
        ranks = [
            int(p.metadata.get("rank", i)) if type(p.metadata.get("rank")) is int else i for i, p in enumerate(profiles)
        ]
    if len(ranks) != len(profiles):
        raise ValueError("one rank per profile")
    b = ProfileBuilder()
    present = {m for p in profiles for m in p.metrics}
    for m in [m for m in STANDARD_METRICS if m in present] + sorted(present - set(STANDARD_METRICS)):
        b.ensure_metric(m)
    timelines: list[tuple[Timeline, np.ndarray[Any, np.dtype[np.int32]], int]] = []
    for prof, rank in zip(profiles, ranks, strict=True):
        mapping = np.zeros(len(prof), dtype=np.int32)
        mapping[0] = b.child(0, Frame.scope(f"rank {rank}"))
        parent = prof.parent.tolist()
        frame = prof.frame.tolist()
        for node in range(1, len(prof)):
            mapping[node] = b.child(int(mapping[parent[node]]), prof.frames[frame[node]])
        for name, col in prof.metrics.items():
            for node in np.nonzero(col)[0].tolist():
                b.add(int(mapping[node]), name, float(col[node]))
        if prof.timeline is not None:
            timelines.append((prof.timeline, mapping, rank))
    metadata = _merged_metadata(profiles, ranks)
    return b.build(metadata, _merge_timelines(timelines) if timelines else None)


def _merge_timelines(parts: list[tuple[Timeline, np.ndarray[Any, np.dtype[np.int32]], int]]) -> Timeline:
    tracks: list[Track] = []
    cols: dict[str, list[np.ndarray[Any, Any]]] = {}
    for tl, mapping, rank in parts:
        offset = len(tracks)
        tracks.extend(Track(t.name, f"rank {rank}/{t.device}", t.kind) for t in tl.tracks)
        for name, col in tl.columns().items():
            if name == "node":
                col = mapping[col]
            elif name == "track":
                col = col + offset
            cols.setdefault(name, []).append(col)
    return Timeline.from_columns({k: np.concatenate(v) for k, v in cols.items()}, tuple(tracks))


def _merged_metadata(profiles: Sequence[Profile], ranks: Sequence[int]) -> dict[str, Any]:
    entries: list[dict[str, Any]] = []
    warnings: dict[str, int] = {}
    world: int | None = None
    for prof, rank in zip(profiles, ranks, strict=True):
        meta = prof.metadata
        entry: dict[str, Any] = {"rank": rank, "source": meta.get("source")}
        for key in ("world_size", "devices", "trace_start_ns", "import_warnings"):
            if key in meta:
                entry[key] = meta[key]
        entries.append(entry)
        if type(meta.get("world_size")) is int:
            world = meta["world_size"]
        for key, n in (meta.get("import_warnings") or {}).items():
            warnings[key] = warnings.get(key, 0) + int(n)
    merged: dict[str, Any] = {
        "source": {"format": "merged", "ranks": len(profiles)},
        "ranks": entries,
        "import_warnings": warnings,
        # every rank's devices, named as the merged timeline names them ("rank 1/cuda:0")
        "devices": [
            replace(d, id=f"rank {rank}/{d.id}", rank=rank).to_json()
            for prof, rank in zip(profiles, ranks, strict=True)
            for d in devices_of(prof.metadata)
        ],
    }
    if world is not None:
        merged["world_size"] = world
    return merged
