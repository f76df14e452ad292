"""``compile_time``: compile time per frame/graph, and steady-state time outside compiled graphs."""

from __future__ import annotations

from ...model import Profile
from . import Finding, Severity, rule
from ._compile import compile_metadata, ms

SLOW_COMPILE_S = 1.0
ISLAND_SHARE = 0.10  # of the time inside compiled callables


@rule("compile_time", "time spent compiling, and time spent in eager code between compiled graphs")
def compile_time(profile: Profile) -> list[Finding]:
    meta = compile_metadata(profile)
    out: list[Finding] = []
    for frame in meta.get("frames", []):
        seconds = float(frame.get("compile_time_s") or 0.0)
        if seconds < SLOW_COMPILE_S:
            continue
        graphs = int(frame.get("graphs") or 0)
        compiles = int(frame.get("compiles") or 0)
        out.append(
            Finding(
                rule="compile_time",
                severity=Severity.INFO,
                title=f"Compiling {frame.get('function')} took {seconds:.1f} s",
                evidence=f"{compiles} compilation(s) of {graphs} graph(s)"
                + (f"; {compiles - graphs} were recompilations" if compiles > graphs else ""),
                file=frame.get("file") or None,
                line=int(frame.get("line") or 0) or None,
            )
        )
    out.extend(_islands(meta.get("runtime") or {}))
    return out


def _islands(runtime: dict[str, float]) -> list[Finding]:
    entry = float(runtime.get("entry_ns") or 0.0)
    graph = float(runtime.get("graph_ns") or 0.0) - float(runtime.get("backward_graph_ns") or 0.0)
    island = float(runtime.get("eager_island_ns") or 0.0)
    if entry <= 0:
        return []
    outside = max(entry - min(graph, entry), 0.0)
    share = island / entry
    severity = Severity.WARNING if share >= ISLAND_SHARE else Severity.INFO
    return [
        Finding(
            rule="compile_time",
            severity=severity,
            title=f"{share:.0%} of the time in compiled calls is eager code between graphs",
            evidence=f"{ms(entry)} ms inside torch.compile'd calls: {ms(island)} ms in eager ops between regions, "
            f"{ms(outside)} ms outside compiled graphs in all (eager islands, guards, runtime wrappers)",
            estimated_saving_ms=ms(island) if island else None,
        )
    ]
