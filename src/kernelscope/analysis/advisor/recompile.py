"""``recompile``: each recompilation with its reason (shape, dtype, value guard) and the call's line."""

from __future__ import annotations

from ...model import Profile
from . import Finding, Severity, Thresholds, rule
from ._compile import compile_metadata, compiled_regions

_ADVICE = {
    "shape": "mark the dimension dynamic (torch._dynamo.mark_dynamic) or pad to a fixed shape",
    "value": "pass the Python number as a tensor, or keep it constant",
    "dtype": "keep input dtypes stable across calls",
    "type": "pass the same types on every call",
    "identity": "avoid passing new objects (closures, modules) on each call",
}


@rule("recompile", "torch.compile recompiled a function because a guard failed")
def recompiles(profile: Profile, t: Thresholds) -> list[Finding]:
    meta = compile_metadata(profile)
    compile_time = {c.get("compile_id"): c.get("compile_time_s") for c in meta.get("compiles", [])}
    out: list[Finding] = []
    for rc in meta.get("recompiles", []):
        kind = rc.get("guard", "other")
        used = f" (guarded value used at {rc['guard_file']}:{rc['guard_line']})" if rc.get("guard_line") else ""
        cost = compile_time.get(rc.get("compile_id"))
        spent = f"; recompiling took {cost:.2f} s" if isinstance(cost, (int, float)) else ""
        advice = _ADVICE.get(kind)
        out.append(
            Finding(
                rule="recompile",
                severity=Severity.WARNING,
                title=f"Recompiled {rc.get('function') or 'a function'} ({kind} guard failed)",
                evidence=f"guard {rc.get('reason', '')!r} failed{used}{spent}",
                file=rc.get("file") or rc.get("def_file") or None,
                line=int(rc.get("line") or rc.get("def_line") or 0) or None,
                estimated_saving_ms=round(cost * 1000, 3) if isinstance(cost, (int, float)) else None,
                saving_method="the recompilation's own compile time" if isinstance(cost, (int, float)) else "",
                fix=advice or "",
            )
        )
    if not meta.get("recompiles"):
        out.extend(_from_trace(profile))
    return out


def _from_trace(profile: Profile) -> list[Finding]:
    by_frame: dict[int, set[int]] = {}
    for r in compiled_regions(profile):
        by_frame.setdefault(r.frame_id, set()).add(r.compile_id)
    out: list[Finding] = []
    for frame_id, ids in sorted(by_frame.items()):
        if len(ids) > 1:
            out.append(
                Finding(
                    rule="recompile",
                    severity=Severity.WARNING,
                    title=f"Compiled frame {frame_id} ran {len(ids)} different compilations",
                    evidence="regions "
                    + ", ".join(f"{frame_id}/{c}" for c in sorted(ids))
                    + " appear in the trace; each is a recompilation",
                )
            )
    return out
