"""``graph_break``: each break with its reason and the user's file:line; graphs per frame."""

from __future__ import annotations

from ...model import Profile
from . import Finding, Severity, Thresholds, rule
from ._compile import compile_metadata, compiled_regions


@rule("graph_break", "torch.compile split a function into several graphs (eager code runs in between)")
def graph_breaks(profile: Profile, t: Thresholds) -> list[Finding]:
    meta = compile_metadata(profile)
    frames = {(f.get("file"), f.get("function")): f for f in meta.get("frames", [])}
    out: list[Finding] = []
    for gb in meta.get("graph_breaks", []):
        frame = frames.get((gb.get("file"), gb.get("function")))
        graphs = (
            f"; {frame['function']} was split into {frame['graphs']} graphs" if frame and frame.get("graphs") else ""
        )
        count = int(gb.get("count", 1))
        seen = f" (hit {count}× while compiling)" if count > 1 else ""
        out.append(
            Finding(
                rule="graph_break",
                severity=Severity.WARNING,
                title=f"Graph break in {gb.get('function') or 'compiled code'}: {gb.get('type') or 'unsupported code'}",
                evidence=f"{gb.get('reason', '')}{seen}{graphs}",
                file=gb.get("file") or None,
                line=int(gb["line"]) if gb.get("line") else None,
                fix="move the unsupported call out of the compiled function, or make it traceable "
                "(torch._dynamo.explain shows every break)",
            )
        )
    if not meta.get("graph_breaks"):
        out.extend(_from_trace(profile))
    return out


def _from_trace(profile: Profile) -> list[Finding]:
    """Imported traces carry no reasons: nested regions and several frames per call reveal breaks."""
    regions = compiled_regions(profile)
    nested = [r for r in regions if r.parent_region is not None]
    if not nested:
        return []
    frames = sorted({r.frame_id for r in regions})
    pairs = sorted(
        {
            (profile.frame_of(r.parent_region).name, profile.frame_of(r.node).name)
            for r in nested
            if r.parent_region is not None
        }
    )
    shown = "; ".join(f"{inner} inside {outer}" for outer, inner in pairs[:5])
    return [
        Finding(
            rule="graph_break",
            severity=Severity.WARNING,
            title=f"Compiled regions nest: {len(frames)} compiled frames, graph breaks likely",
            evidence=f"{shown}. The trace has no reasons; rerun with `kernelscope run` to get each break's line",
        )
    ]
