"""The timeline part of a report's data: lanes of intervals, and the ``timeline --json`` analysis.

Rows travel columnar with start times relative to the first row. Above ``MAX_ROWS`` rows the
longest ``MAX_ROWS`` are kept (the page says how many were left out). The breakdown, idle gaps,
launch statistics and syncs come from :func:`kernelscope.analysis.timeline.analyze`, the
numbers ``kernelscope timeline --json`` prints.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...model import Profile
from ...model.timeline import Category

MAX_ROWS = 200_000


def timeline_payload(profile: Profile) -> dict[str, Any] | None:
    tl = profile.timeline
    if tl is None or len(tl) == 0:
        return None
    keep = np.flatnonzero(tl.category != int(Category.FRAME))  # (lanes of ops and device work)
    if len(keep) == 0:
        return None
    rows = len(keep)
    if rows > MAX_ROWS:
        keep = keep[np.argpartition(-tl.dur_ns[keep], MAX_ROWS - 1)[:MAX_ROWS]]
    keep = keep[np.argsort(tl.start_ns[keep], kind="stable")]
    start = tl.start_ns[keep]
    t0 = int(start.min())
    out: dict[str, Any] = {
        "tracks": [t.to_json() for t in tl.tracks],
        "categories": [c.name.lower() for c in Category],
        "track": tl.track[keep].tolist(),
        "start": (start - t0).tolist(),
        "dur": tl.dur_ns[keep].tolist(),
        "node": tl.node[keep].tolist(),
        "cat": tl.category[keep].tolist(),
        "corr": tl.correlation[keep].tolist(),
        "rows": rows,
        "t0_ns": t0,
    }
    try:
        from ...analysis.timeline import analyze

        out["analysis"] = analyze(profile).to_json()
    except Exception as exc:  # the lanes are still worth showing
        out["analysis_error"] = f"{type(exc).__name__}: {exc}"
    return out
