"""``compile_time``: compile time per compiled function, at the program's ``torch.compile`` line."""

from __future__ import annotations

from ...model import Profile
from . import Finding, Severity, Threshold, Thresholds, rule
from ._compile import compile_metadata

SLOW_COMPILE_S = 1.0


@rule(
    "compile_time",
    "time spent compiling each compiled function",
    thresholds={
        "slow_compile_s": Threshold(SLOW_COMPILE_S, "report a compiled function whose compilations took this long"),
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
        name = frame.get("compiled") or frame.get("function")
        where = [f"defined at {frame.get('file')}:{frame.get('line')}"] if frame.get("compile_file") else []
        if frame.get("call_file"):
            where.append(f"first called at {frame['call_file']}:{frame['call_line']}")
        out.append(
            Finding(
                rule="compile_time",
                severity=Severity.INFO,
                title=f"Compiling {name} took {seconds:.1f} s",
                evidence=f"{compiles} compilation(s) of {graphs} graph(s)"
                + (f"; {compiles - graphs} were recompilations" if compiles > graphs else "")
                + (f" ({', '.join(where)})" if where else ""),
                fix="cache compiled artifacts across runs (TORCHINDUCTOR_FX_GRAPH_CACHE, mega-cache), "
                "compile fewer or smaller functions, or use mode='reduce-overhead' only where it pays",
                # the torch.compile(...) line when the run recorded it, else the compiled function's
                file=frame.get("compile_file") or frame.get("file") or None,
                line=int(frame.get("compile_line") or frame.get("line") or 0) or None,
            )
        )
    return out
