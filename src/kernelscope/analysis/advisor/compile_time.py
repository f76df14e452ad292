"""``compile_time``: compile time per frame/graph, and steady-state time outside compiled graphs."""

from __future__ import annotations

from ...model import Profile
from . import Finding, Severity, Threshold, Thresholds, rule
from ._compile import compile_metadata, ms

SLOW_COMPILE_S = 1.0
ISLAND_SHARE = 0.10  # of the time inside compiled callables


@rule(
    "compile_time",
    "time spent compiling, and time spent in eager code between compiled graphs",
    thresholds={
        "slow_compile_s": Threshold(SLOW_COMPILE_S, "report a compiled function whose compilations took this long"),
        "island_share": Threshold(ISLAND_SHARE, "warn when eager code between graphs is this share of compiled calls"),
    },
)
def compile_time(profile: Profile, t: Thresholds) -> list[Finding]:
    meta = compile_metadata(profile)
    out: list[Finding] = []
    for frame in meta.get("frames", []):
        seconds = float(frame.get("compile_time_s") or 0.0)
        if seconds < t["slow_compile_s"]:
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
                fix="cache compiled artifacts across runs (TORCHINDUCTOR_FX_GRAPH_CACHE, mega-cache), "
                "compile fewer or smaller functions, or use mode='reduce-overhead' only where it pays",
                file=frame.get("file") or None,
                line=int(frame.get("line") or 0) or None,
            )
        )
    out.extend(_islands(meta.get("runtime") or {}, t["island_share"]))
    return out


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
            rule="compile_time",
            severity=severity,
            title=f"{share:.0%} of the time in compiled calls is eager code between graphs",
            evidence=f"{ms(entry)} ms inside torch.compile'd calls: {ms(island)} ms in eager ops between regions, "
            f"{ms(outside)} ms outside compiled graphs in all (eager islands, guards, runtime wrappers)",
            estimated_saving_ms=ms(island) if island else None,
        )
    ]
