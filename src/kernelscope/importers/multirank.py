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
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from typing import Any

import numpy as np
import numpy.typing as npt

from ..model import STANDARD_METRICS, Frame, Profile, Timeline, Track
from ..model.devices import devices_of
from ..model.frames import ROOT
from .registry import import_file

__all__ = ["import_ranks", "merge_ranks", "rank_in", "rank_of", "ranks_of"]

_RANK_IN_NAME = re.compile(r"rank[-_]?(\d+)", re.I)


def rank_of(path: str, profile: Profile) -> int | None:
    return rank_in(path, profile.metadata)


def rank_in(path: str, metadata: Mapping[str, Any]) -> int | None:
    """A rank file's rank: ``distributedInfo.rank``, else ``rank-N`` in its name, else None."""
    rank = metadata.get("rank")
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


def merge_ranks(profiles: Iterable[Profile], ranks: Sequence[int] | None = None) -> Profile:
    """One profile with each rank's tree under ``[rank R]``; metrics, timeline and metadata combined.

    ``profiles`` is read once, in order: with ``ranks`` given it may be a generator that loads one rank at
    a time. Each rank's tree is appended whole under its scope (its root becomes the scope), as arrays: the
    merge holds the merged arrays and one rank, not a node-by-node builder of every rank."""
    if ranks is None:
        profiles = list(profiles)
        ranks = [
            int(p.metadata.get("rank", i)) if type(p.metadata.get("rank")) is int else i for i, p in enumerate(profiles)
        ]
        if len(set(ranks)) != len(ranks):  # two files claim one rank: their order names them, as ranks_of does
            ranks = list(range(len(profiles)))
    if len(set(ranks)) != len(ranks):
        raise ValueError("one profile per rank")
    index: dict[Frame, int] = {ROOT: 0}
    parents: list[npt.NDArray[np.int32]] = [np.full(1, -1, dtype=np.int32)]
    frame_cols: list[npt.NDArray[np.int32]] = [np.zeros(1, dtype=np.int32)]
    blocks: list[dict[str, npt.NDArray[np.float64]]] = [{}]
    timelines: list[tuple[Timeline, npt.NDArray[np.int32], int]] = []
    metas: list[Mapping[str, Any]] = []
    offset = 1
    for prof, rank in zip(profiles, ranks, strict=True):
        metas.append(prof.metadata)
        n = len(prof)
        # frames interned as a node-by-node build would: the scope, then each frame at its first node
        scope = index.setdefault(Frame.scope(f"rank {rank}"), len(index))
        remap = np.zeros(len(prof.frames), dtype=np.int32)
        used, first = np.unique(prof.frame[1:], return_index=True)
        for f in used[np.argsort(first)].tolist():
            remap[f] = index.setdefault(prof.frames[f], len(index))
        fc = remap[prof.frame]
        fc[0] = scope
        par = prof.parent.astype(np.int32) + offset
        par[0] = 0
        parents.append(par)
        frame_cols.append(fc)
        blocks.append(dict(prof.metrics))
        if prof.timeline is not None:
            timelines.append((prof.timeline, np.arange(offset, offset + n, dtype=np.int32), rank))
        offset += n
    if len(metas) != len(ranks):
        raise ValueError("one rank per profile")
    present = {m for block in blocks for m in block}
    names = [m for m in STANDARD_METRICS if m in present] + sorted(present - set(STANDARD_METRICS))
    sizes = [len(p) for p in parents]
    metrics = {
        m: np.concatenate([b.get(m, np.zeros(k)) for b, k in zip(blocks, sizes, strict=True)]).astype(np.float64)
        for m in names
    }
    return Profile(
        frames=tuple(index),  # (insertion order: the indices)
        parent=np.concatenate(parents),
        frame=np.concatenate(frame_cols),
        metrics=metrics,
        metadata=_merged_metadata(metas, ranks),
        timeline=_merge_timelines(timelines) if timelines else None,
    )


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


def _merged_metadata(metas: Sequence[Mapping[str, Any]], ranks: Sequence[int]) -> dict[str, Any]:
    entries: list[dict[str, Any]] = []
    warnings: dict[str, int] = {}
    world: int | None = None
    for meta, rank in zip(metas, ranks, strict=True):
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
        "source": {"format": "merged", "ranks": len(metas)},
        "ranks": entries,
        "import_warnings": warnings,
        # every rank's devices, named as the merged timeline names them ("rank 1/cuda:0")
        "devices": [
            replace(d, id=f"rank {rank}/{d.id}", rank=rank).to_json()
            for meta, rank in zip(metas, ranks, strict=True)
            for d in devices_of(meta)
        ],
    }
    if world is not None:
        merged["world_size"] = world
    if metas and all(meta.get("python_lines") == "def" for meta in metas):
        merged["python_lines"] = "def"  # (every rank's Python frames name functions: diff compares by function)
    return merged
