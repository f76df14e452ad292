"""speedscope's file format (https://www.speedscope.app/file-format-schema.json).

One ``sampled`` profile in nanoseconds: one sample per node with exclusive ``time_ns``
(rounded to an integer, zeros left out), its stack the node's frames outermost first
(the root left out), its weight that time. ``shared.frames`` holds one entry per
distinct frame, ``name`` = ``Frame.label()`` (a kernel whose name runs on several devices or
streams followed by `` [cuda:0 stream 7]``); python frames add ``file`` and ``line``.
"""

from __future__ import annotations

import json
from typing import Any, TextIO

from ...model import FrameKind, Profile
from ...version import __version__
from ._tree import distinct_labels
from .registry import Exporter, register

SCHEMA = "https://www.speedscope.app/file-format-schema.json"
METRIC = "time_ns"


def document(profile: Profile) -> dict[str, Any]:
    frames: list[dict[str, Any]] = []
    labels = distinct_labels(profile)
    index: dict[int, int] = {}  # profile frame index -> speedscope frame index
    frame = profile.frame.tolist()
    parent = profile.parent.tolist()

    def shared(fi: int) -> int:
        out = index.get(fi)
        if out is None:
            f = profile.frames[fi]
            entry: dict[str, Any] = {"name": labels[fi]}
            if f.kind is FrameKind.PYTHON:
                entry["file"], entry["line"] = f.file, f.line
            out = index[fi] = len(frames)
            frames.append(entry)
        return out

    samples: list[list[int]] = []
    weights: list[int] = []
    for node, value in enumerate(profile.exclusive(METRIC).tolist()):
        weight = round(value)
        if weight <= 0:
            continue
        stack: list[int] = []
        n = node
        while n > 0:
            stack.append(shared(frame[n]))
            n = parent[n]
        if not stack:  # time on the root itself
            stack.append(shared(frame[0]))
        stack.reverse()
        samples.append(stack)
        weights.append(weight)

    given = profile.metadata.get("name")
    name = given if isinstance(given, str) and given else "kernelscope profile"
    return {
        "$schema": SCHEMA,
        "shared": {"frames": frames},
        "profiles": [
            {
                "type": "sampled",
                "name": f"{name} ({METRIC}, exclusive)",
                "unit": "nanoseconds",
                "startValue": 0,
                "endValue": sum(weights),
                "samples": samples,
                "weights": weights,
            }
        ],
        "name": name,
        "activeProfileIndex": 0,
        "exporter": f"kernelscope {__version__}",
    }


def dump(profile: Profile, fh: TextIO) -> None:
    json.dump(document(profile), fh, separators=(",", ":"))
    fh.write("\n")


EXPORTER = register(
    Exporter(
        name="speedscope",
        description="speedscope JSON (sampled, weights = exclusive time_ns)",
        suffix=".speedscope.json",
        dump=dump,
    )
)
