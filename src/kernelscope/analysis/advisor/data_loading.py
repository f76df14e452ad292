"""Host side: the step waited on its data source.

``data_loading`` reads the DataLoader iterator's ``__next__`` scopes. ``data_source`` covers any
iterator (a generator, a dataset indexed by hand): what such a source costs is Python work of its
own, outside every op. Host self time (``cpu_time_ns``) of a Python frame is exactly that: a live
run puts a call's own Python time on the line that made the call (the loop line that pulled the
item: the generator's ``__next__`` is a call from it); an imported trace with ``python_function``
events puts it on the function itself (traces name def lines, not call lines).
"""

from __future__ import annotations

from ...model import FrameKind, Profile
from ..context import ContextIndex
from . import EVERYWHERE, Applies, Finding, Severity, Threshold, Thresholds, rule, run_kind
from ._evidence import ms, split_line

_LOADER = "enumerate(DataLoader)#"
_GENERATED = "torchinductor_"  # Inductor's output code (/tmp/torchinductor_<user>/...)


def _metric(profile: Profile) -> str:
    return "cpu_time_ns" if profile.total("cpu_time_ns") > 0 else "time_ns"


def loader_ns(profile: Profile) -> float:
    """Host time spent fetching batches (DataLoader iterator scopes, outermost only)."""
    inc = profile.inclusive(_metric(profile))
    total = 0.0
    for node in range(1, len(profile)):
        f = profile.frame_of(node)
        if f.kind is FrameKind.SCOPE and f.name.startswith(_LOADER):
            total += float(inc[node])
    return total


@rule(
    "data_loading",
    "fetching the next batch took a large share of the host's time: the GPU waits for data",
    thresholds={"warn_pct": Threshold(5.0, "warn when fetching batches is at least this % of the host time")},
    applies=EVERYWHERE,
)
def data_loading(profile: Profile, t: Thresholds) -> list[Finding]:
    inc = profile.inclusive(_metric(profile))
    total = float(inc[0]) or 1.0
    ctx = ContextIndex(profile)
    out: list[Finding] = []
    for node in range(1, len(profile)):
        f = profile.frame_of(node)
        if f.kind is not FrameKind.SCOPE or not f.name.startswith(_LOADER) or inc[node] <= 0:
            continue
        share = 100.0 * inc[node] / total
        file, line = split_line(ctx.line(node))
        out.append(
            Finding(
                rule="data_loading",
                severity=Severity.WARNING if share >= t["warn_pct"] else Severity.INFO,
                title=f"Fetching batches took {share:.0f}% of the host time ({ms(inc[node]):,} ms)",
                evidence=f"{f.name}: {ms(inc[node])} ms of {ms(total)} ms host time",
                file=file,
                line=line,
                estimated_saving_ms=ms(inc[node]),
                saving_method="the time in the iterator: the upper bound if loading fully overlapped the step",
                fix="load in the background: DataLoader(num_workers>0, pin_memory=True, prefetch_factor, "
                "persistent_workers=True); move preprocessing off the critical path",
                nodes=(node,),
            )
        )
    return out


@rule(
    "data_source",
    "a line spent much of the run in its own Python work, outside any op: an iterator or preprocessing "
    "slower than the step it feeds",
    thresholds={
        "min_pct": Threshold(2.0, "report a line whose own Python work is at least this % of the host time"),
        "warn_pct": Threshold(10.0, "warn when it is at least this % of the host time"),
        "python_share": Threshold(0.5, "... and at least this share of the line's time is Python, not ops"),
    },
    applies=EVERYWHERE,
)
def data_source(profile: Profile, t: Thresholds) -> list[Finding]:
    if "cpu_time_ns" not in profile.metrics:
        return []
    own = profile.exclusive("cpu_time_ns")
    inc = profile.inclusive("cpu_time_ns")
    total = float(inc[0]) or 1.0
    # a trace names a function by its def line (a resumed generator: its yield line): one place per function
    by_function = run_kind(profile) is Applies.IMPORTED
    per_line: dict[tuple[str, int | str], list[float]] = {}
    nodes: dict[tuple[str, int | str], list[int]] = {}
    for node in range(1, len(profile)):
        f = profile.frame_of(node)
        if f.kind is not FrameKind.PYTHON or own[node] <= 0 or _GENERATED in f.file:
            continue  # an Inductor wrapper's own time is launching its kernels, not the program's Python
        key: tuple[str, int | str] = (f.file, f.name if by_function else f.line)
        acc = per_line.setdefault(key, [0.0, 0.0])
        acc[0] += float(own[node])
        acc[1] += float(inc[node])
        nodes.setdefault(key, []).append(node)
    out: list[Finding] = []
    for key, (py, line_ns) in per_line.items():
        share = 100.0 * py / total
        if share < t["min_pct"] or py < t["python_share"] * line_ns:
            continue
        # the code the line runs in (the loop it feeds), less the line itself
        parents = {int(profile.parent[n]) for n in nodes[key]} - {0}
        rest = max(sum(float(inc[p]) for p in parents) - line_ns, 0.0)
        file = key[0]
        line = min(profile.frame_of(n).line for n in nodes[key])
        function = profile.frame_of(nodes[key][0]).name
        where = f"{function}'s own code" if by_function else f"the calls made at this line (in {function})"
        python_pct = 100.0 * py / (line_ns or 1.0)
        source = python_pct >= 90.0  # next to no ops: work that produces items, not a step's Python overhead
        out.append(
            Finding(
                rule="data_source",
                severity=Severity.WARNING if share >= t["warn_pct"] else Severity.INFO,
                title=f"{ms(py):,} ms of Python work at {file}:{line} ({share:.0f}% of the host time), "
                + ("no ops: a data source slower than the step?" if source else "around its ops: Python overhead"),
                evidence=f"host self time (Python, and C extensions it calls) of {where}: {ms(py)} ms of "
                f"{ms(line_ns)} ms under it ({python_pct:.0f}% outside ops); "
                f"the rest of the enclosing code took {ms(rest)} ms",
                file=file,
                line=line,
                estimated_saving_ms=ms(py),
                saving_method="the Python work's own time: the upper bound if it overlapped the step "
                "(background workers) or were done once",
                fix=(
                    "if this line pulls items from an iterator, move the per-item work off the step: precompute "
                    "it, vectorise it (numpy/torch on whole batches), or wrap the source in a DataLoader with "
                    "num_workers>0 so it runs ahead of the step"
                    if source
                    else "cut per-call Python overhead: hoist invariant work out of the step, cache, or capture "
                    "the step (torch.compile, CUDA graphs) so Python runs once"
                ),
                nodes=tuple(nodes[key]),
            )
        )
    return out
