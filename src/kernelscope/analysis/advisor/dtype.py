"""Efficiency: a tensor converted to another dtype and back at one line (a dtype round trip)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from ...model import FrameKind, Profile
from . import EVERYWHERE, Finding, Severity, Threshold, Thresholds, rule
from ._evidence import line_sites, ms, time_metric

_CASTS = frozenset({"aten::to", "aten::_to_copy", "aten::type_as"})
_XLA_CAST = "convert_element_type"  # the JAX primitive (an HLO ``convert``)


@rule(
    "dtype_round_trip",
    "a tensor is converted to another dtype and back at one line: two copies that change nothing",
    thresholds={
        "min_ms": Threshold(0.1, "report a round trip whose conversions take at least this"),
        "warn_pct": Threshold(1.0, "warn when the conversions are at least this % of the measured time"),
    },
    applies=EVERYWHERE,  # wherever the conversions' dtypes were recorded: live torch runs, JAX runs and XPlanes
)
def dtype_round_trip(profile: Profile, t: Thresholds) -> list[Finding]:
    casts = profile.metadata.get("casts")
    if not isinstance(casts, list):
        return []  # recorded by live torch runs and XPlane imports (Kineto traces do not name the dtypes)
    pairs: dict[tuple[str, int], dict[tuple[str, str], float]] = defaultdict(dict)
    for c in casts:
        if isinstance(c, dict):
            pairs[(str(c.get("file")), int(c.get("line") or 0))][(str(c.get("from")), str(c.get("to")))] = float(
                c.get("calls") or 0
            )
    trips = {
        place: sorted({tuple(sorted(k)) for k in conv if (k[1], k[0]) in conv})
        for place, conv in pairs.items()
        if any((b, a) in conv for a, b in conv)
    }
    if not trips:
        return []
    metric = time_metric(profile)
    inc = profile.inclusive(metric)
    total = profile.total(metric) or 1.0
    time_at: dict[tuple[str, int], float] = defaultdict(float)
    nodes: dict[tuple[str, int], list[int]] = defaultdict(list)
    for site in line_sites(profile):
        key = (site.file, site.line)
        if key in trips:
            for op in site.ops:
                if profile.frame_of(op).name in _CASTS and profile.frame_of(int(profile.parent[op])).name not in _CASTS:
                    time_at[key] += inc[op]
                    nodes[key].append(op)
    for key, (ns, found) in _xla_casts(profile, trips.keys(), metric).items():
        time_at[key] += ns
        nodes[key].extend(found)
    out: list[Finding] = []
    for (file, line), kinds in trips.items():
        time = time_at.get((file, line), 0.0)
        if time < t["min_ms"] * 1e6:
            continue
        conv = pairs[(file, line)]
        round_trips = ", ".join(f"{a} → {b} → {a}" for a, b in kinds)
        calls = int(sum(conv.values()))
        out.append(
            Finding(
                rule="dtype_round_trip",
                severity=Severity.WARNING if 100.0 * time / total >= t["warn_pct"] else Severity.INFO,
                title=f"dtype round trip at {file}:{line} ({round_trips})",
                evidence=f"{calls} conversion(s) taking {ms(time)} ms ({100.0 * time / total:.1f}% of the measured time)",
                file=file,
                line=line,
                estimated_saving_ms=ms(time),
                saving_method="the conversions' own time (the values come back to the dtype they started in)",
                fix="keep the tensor in one dtype here (drop the .to()/.double()/.float() or .astype() pair), or "
                "compute in the wider dtype only where it is needed",
                occurrences=calls,
                nodes=tuple(nodes[(file, line)]),
            )
        )
    return out


def _xla_casts(
    profile: Profile, places: Iterable[tuple[str, int]], metric: str
) -> dict[tuple[str, int], tuple[float, list[int]]]:
    """Time of XLA conversions at each place: ``convert_element_type`` parts of fused kernels at that line,
    and unfused ``convert_element_type`` ops whose innermost line it is."""
    wanted = set(places)
    own = profile.exclusive(metric)
    inc = profile.inclusive(metric)
    line_of: list[tuple[str, int] | None] = [None] * len(profile)
    par = profile.parent.tolist()
    out: dict[tuple[str, int], tuple[float, list[int]]] = {}
    for node in range(1, len(profile)):
        f = profile.frame_of(node)
        line_of[node] = (f.file, f.line) if f.kind is FrameKind.PYTHON else line_of[par[node]]
        if f.name != _XLA_CAST:
            continue
        if f.kind is FrameKind.PART and (f.file, f.line) in wanted:
            where, ns = (f.file, f.line), float(own[node])
        elif f.kind is FrameKind.OP and line_of[node] in wanted and not _split(profile, node):
            where, ns = line_of[node], float(inc[node])  # type: ignore[assignment]
        else:
            continue
        ns0, found = out.get(where, (0.0, []))
        out[where] = (ns0 + ns, [*found, node])
    return out


def _split(profile: Profile, op: int) -> bool:
    """Whether the op's kernels are split into parts (their conversions are counted at the parts)."""
    return any(profile.frame_of(g).kind is FrameKind.PART for k in profile.children[op] for g in profile.children[k])
