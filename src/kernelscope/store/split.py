"""A merged profile back into its ranks: the subtree under each ``[rank R]`` scope, with its timeline rows."""

from __future__ import annotations

import re

import numpy as np

from ..model import FrameKind, Profile, Timeline, Track

_RANK_SCOPE = re.compile(r"rank (\d+)$")
_RANK_DEVICE = re.compile(r"^rank \d+/")


def split_ranks(merged: Profile) -> list[tuple[int, Profile]]:
    """``(rank, profile)`` per ``[rank R]`` scope under the root; [] for a profile that is not merged."""
    if (merged.metadata.get("source") or {}).get("format") != "merged":
        return []
    out: list[tuple[int, Profile]] = []
    par = merged.parent
    for top in merged.children[0]:
        frame = merged.frame_of(top)
        m = _RANK_SCOPE.match(frame.name) if frame.kind is FrameKind.SCOPE else None
        if m is None:
            continue
        inside = np.zeros(len(merged), dtype=bool)
        inside[top] = True
        for node in range(top + 1, len(merged)):  # parents precede children
            inside[node] = inside[par[node]]
        sub = np.flatnonzero(inside)
        sub = sub[sub != top]
        new = np.full(len(merged), -1, dtype=np.int64)
        new[top] = 0  # the rank scope becomes the root
        new[sub] = np.arange(1, sub.size + 1)
        frame_col = np.concatenate([[merged.frame[0]], merged.frame[sub]]).astype(np.int32)
        parent = np.concatenate([[-1], new[par[sub]]]).astype(np.int32)
        metrics = {k: np.concatenate([[0.0], v[sub]]) for k, v in merged.metrics.items()}
        timeline = None
        tl = merged.timeline
        if tl is not None:
            rows = inside[tl.node]
            sel = tl.select(rows)
            tracks = tuple(Track(t.name, _RANK_DEVICE.sub("", t.device), t.kind) for t in tl.tracks)
            cols = sel.columns()
            cols["node"] = new[sel.node].astype(np.int32)
            timeline = Timeline.from_columns(cols, tracks)
        rank = int(m.group(1))
        meta = {"rank": rank, "device_run": merged.metadata.get("device_run")}
        out.append((rank, Profile(merged.frames, parent, frame_col, metrics, meta, timeline)))
    return out


__all__ = ["split_ranks"]
