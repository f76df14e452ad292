"""Shared reading of compile diagnostics for the torch.compile rules."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...attribute.compiled_regions import COMPILED
from ...attribute.records import TORCH_REGION, region_name
from ...model import FrameKind, Profile


def compile_metadata(profile: Profile) -> dict[str, Any]:
    meta = profile.metadata.get("compile")
    return meta if isinstance(meta, dict) else {}


@dataclass(frozen=True)
class RegionNode:
    node: int
    frame_id: int
    compile_id: int
    parent_region: int | None  # nearest enclosing region node


def compiled_regions(profile: Profile) -> list[RegionNode]:
    """``Torch-Compiled Region: F/C`` frames in the tree (imported traces), with their nesting."""
    out: list[RegionNode] = []
    for node in range(1, len(profile)):
        ids = _region_ids(profile, node)
        if ids is None:
            continue
        parent = None
        for anc in profile.ancestors(int(profile.parent[node])):
            if _region_ids(profile, anc) is not None:
                parent = anc
                break
        out.append(RegionNode(node, ids[0], ids[1], parent))
    return out


def _region_ids(profile: Profile, node: int) -> tuple[int, int] | None:
    frame = profile.frame_of(node)
    if frame.kind is not FrameKind.REGION:
        return None
    if frame.cls == COMPILED:  # named after the compiled callable (attribute.structure): Dynamo's ids kept
        name, ids = TORCH_REGION, frame.ids
    else:
        name, ids = (frame.name, frame.ids) if frame.ids else region_name(frame.name)  # (files before ids)
    if name != TORCH_REGION:
        return None
    parts = ids.split("/")
    if len(parts) != 2 or not all(p.isdigit() for p in parts):
        return None
    return int(parts[0]), int(parts[1])


def ms(ns: float) -> float:
    return round(ns / 1e6, 3)
