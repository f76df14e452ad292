"""``eager_islands``: steady-state time inside torch.compile'd calls that ran eager, between compiled graphs."""

from __future__ import annotations

from typing import Any

from ...model import Profile
from . import Finding, Severity, Threshold, Thresholds, rule
from ._compile import compile_metadata, ms

ISLAND_SHARE = 0.10  # of the time in compiled callables


@rule(
    "eager_islands",
    "time in eager code between compiled graphs (what graph breaks leave to eager mode)",
    thresholds={
        "island_share": Threshold(ISLAND_SHARE, "warn when eager code between graphs is this share of compiled calls"),
    },
)
def eager_islands(profile: Profile, t: Thresholds) -> list[Finding]:
    meta = compile_metadata(profile)
    found = _islands(meta.get("runtime") or {}, t["island_share"])
    if not found:
        return []
    # one compiled function: its torch.compile line is the place to act on
    sites = {(f.get("compile_file"), f.get("compile_line")) for f in meta.get("frames", []) if f.get("compile_file")}
    file, line = next(iter(sites)) if len(sites) == 1 else (None, None)
    return [_at(f, file, line) for f in found]


def _at(f: Finding, file: Any, line: Any) -> Finding:
    from dataclasses import replace

    return replace(f, file=file or None, line=int(line) if line else None)


def _islands(runtime: dict[str, float], island_share: float) -> list[Finding]:
    entry = float(runtime.get("entry_ns") or 0.0)
    graph = float(runtime.get("graph_ns") or 0.0) - float(runtime.get("backward_graph_ns") or 0.0)
    island = float(runtime.get("eager_island_ns") or 0.0)
    if entry <= 0:
        return []
    outside = max(entry - min(graph, entry), 0.0)
    share = island / entry
    if share < island_share / 10:
        return []  # a few guards and wrappers: nothing to act on
    severity = Severity.WARNING if share >= island_share else Severity.INFO
    return [
        Finding(
            rule="eager_islands",
            severity=severity,
            title=f"{share:.0%} of the time in compiled calls is eager code between graphs",
            evidence=f"{ms(entry)} ms inside torch.compile'd calls: {ms(island)} ms in eager ops between regions, "
            f"{ms(outside)} ms outside compiled graphs in all (eager islands, guards, runtime wrappers)",
            estimated_saving_ms=ms(island) if island else None,
        )
    ]
