"""Tree transforms the views chain: pure functions ``Profile -> Profile``.

- ``merge_steps``: ``ProfilerStep#6``, ``#7``, ``#8`` become one ``ProfilerStep#6..8`` context, so an
  imported trace shows its tree once instead of once per step.
- ``merge_ranks``: the ``rank 0`` … ``rank 255`` contexts of a job's merged profile become one
  ``ranks 0..255`` context (the job's time per context, summed over ranks), so the tree shows the job's
  code once instead of once per rank (``kernelscope ranks`` shows how the ranks differ).
- ``group_instances``: trace module frames are named per instance (``Owlv2Attention_6``: class and a
  per-class counter, FIELD-NOTES); they are grouped by class (``Owlv2Attention ×12``).
- ``exclude``: drop matching contexts *and their time* (parents' totals go down by exactly that).
- ``include``: keep only the time inside matching contexts (their ancestors stay, as the path to them).

Each one returns its input unchanged when there is nothing to do. Timelines follow their nodes.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import numpy as np

from ..model import Frame, FrameKind, Profile, ProfileBuilder
from ..model.profile import prune_empty
from ..model.timeline import Timeline

_STEP = re.compile(r"^ProfilerStep#(\d+)$")
_RANK = re.compile(r"^rank (\d+)$")
_INSTANCE = re.compile(r"^(?P<cls>.+)_(?P<n>\d+)$")


def relabel(profile: Profile, fn: Callable[[Frame], Frame]) -> tuple[Profile, list[int]]:
    """The profile with every frame replaced by ``fn(frame)``; siblings that become equal merge.

    Returns the new profile and, per old node, its new node.
    """
    b = ProfileBuilder()
    new_frame = [b.intern(fn(f)) for f in profile.frames]
    par = profile.parent.tolist()
    fr = profile.frame.tolist()
    new = [0] * len(profile)
    for node in range(1, len(profile)):
        new[node] = b.child_at(new[par[node]], new_frame[fr[node]])
    shell = b.build(profile.metadata)
    index = np.asarray(new, dtype=np.int64)
    metrics = {}
    for name, col in profile.metrics.items():
        out = np.zeros(len(shell), dtype=np.float64)
        np.add.at(out, index, col)
        metrics[name] = out
    tl = profile.timeline
    if tl is not None:
        tl = Timeline(tracks=tl.tracks, **{**tl.columns(), "node": index[tl.node].astype(np.int32)})
    return shell.replace(metrics=metrics, timeline=tl), new


def _step_numbers(profile: Profile) -> list[int]:
    out = []
    for f in profile.frames:
        m = _STEP.match(f.name) if f.kind is FrameKind.SCOPE else None
        if m:
            out.append(int(m.group(1)))
    return sorted(out)


def merge_steps(profile: Profile) -> Profile:
    steps = _step_numbers(profile)
    if len(steps) < 2:
        return profile
    contiguous = steps == list(range(steps[0], steps[-1] + 1))
    name = f"ProfilerStep#{steps[0]}..{steps[-1]}" if contiguous else f"ProfilerStep ×{len(steps)}"
    merged = Frame.scope(name)

    def fn(f: Frame) -> Frame:
        return merged if f.kind is FrameKind.SCOPE and _STEP.match(f.name) else f

    return relabel(profile, fn)[0]


def is_rank(name: str) -> bool:
    """A scope that holds one rank's tree in a job's merged profile (``rank 3``)."""
    return _RANK.match(name) is not None


def merge_ranks(profile: Profile) -> Profile:
    top = {profile.frame_of(n) for n in profile.children[0]} if len(profile) else set()
    ranks = sorted(int(m.group(1)) for f in top if f.kind is FrameKind.SCOPE and (m := _RANK.match(f.name)))
    if len(ranks) < 2:
        return profile
    contiguous = ranks == list(range(ranks[0], ranks[-1] + 1))
    merged = Frame.scope(f"ranks {ranks[0]}..{ranks[-1]}" if contiguous else f"ranks ×{len(ranks)}")

    def fn(f: Frame) -> Frame:
        return merged if f in top and f.kind is FrameKind.SCOPE and _RANK.match(f.name) else f

    return relabel(profile, fn)[0]


def instance_class(f: Frame) -> str | None:
    """The class of a per-instance module frame (``Linear_39`` of class ``Linear``), else None."""
    if f.kind is not FrameKind.MODULE or not f.cls:
        return None
    m = _INSTANCE.match(f.name)
    return f.cls if m is not None and m.group("cls") == f.cls else None


def group_instances(profile: Profile) -> Profile:
    if not any(instance_class(f) for f in profile.frames):
        return profile

    def fn(f: Frame) -> Frame:
        cls = instance_class(f)
        return Frame.module_(cls, cls) if cls else f

    out, new = relabel(profile, fn)
    # name each grouped node by how many instances it stands for
    instances: dict[int, set[str]] = {}
    for old, node in enumerate(new):
        f = profile.frame_of(old)
        if instance_class(f):
            instances.setdefault(node, set()).add(f.name)
    frames = list(out.frames)
    index: dict[Frame, int] = {f: i for i, f in enumerate(frames)}
    frame_col = out.frame.copy()
    for node, names in instances.items():
        if len(names) > 1:
            cls = out.frame_of(node).cls
            f = Frame.module_(f"{cls} ×{len(names)}", cls)
            if f not in index:
                index[f] = len(frames)
                frames.append(f)
            frame_col[node] = index[f]
    return out.replace(frames=tuple(frames), frame=frame_col)


def _matches(profile: Profile, pattern: re.Pattern[str]) -> np.ndarray:
    hit_frame = [bool(pattern.search(f.label())) for f in profile.frames]
    return np.asarray(hit_frame, dtype=bool)[profile.frame]


def _under(profile: Profile, hit: np.ndarray) -> np.ndarray:
    """Per node: it or an ancestor is hit."""
    out = hit.copy()
    par = profile.parent.tolist()
    for node in range(1, len(profile)):
        if out[par[node]]:
            out[node] = True
    return out


def _keep_time(profile: Profile, keep: np.ndarray) -> Profile:
    metrics = {name: np.where(keep, col, 0.0) for name, col in profile.metrics.items()}
    return prune_empty(profile.replace(metrics=metrics))


def exclude(profile: Profile, pattern: re.Pattern[str]) -> Profile:
    """Drop the contexts whose label matches, with everything below them and all of their time."""
    return _keep_time(profile, ~_under(profile, _matches(profile, pattern)))


def include(profile: Profile, pattern: re.Pattern[str]) -> Profile:
    """Keep only the time inside contexts whose label matches (and the paths leading to them)."""
    return _keep_time(profile, _under(profile, _matches(profile, pattern)))
