"""XLA (JAX) rules: a jitted function compiled again and again (a new executable per input signature)."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from ...model import Profile
from . import Finding, Severity, Threshold, Thresholds, rule


@rule(
    "jit_recompile",
    "a jitted JAX function ran as several XLA executables: it was traced and compiled again for new input "
    "shapes, dtypes or static arguments",
    thresholds={
        "min_executables": Threshold(2, "report a function with at least this many executables"),
        "warn_executables": Threshold(3, "warn (else info) from this many: one per call site or phase is normal"),
    },
)
def jit_recompile(profile: Profile, t: Thresholds) -> list[Finding]:
    rows = profile.metadata.get("jit_executables")
    if not isinstance(rows, list):
        return []  # recorded by the XPlane import and live JAX runs
    by_function: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        if isinstance(row, dict) and row.get("function") and row.get("file"):
            by_function[str(row["function"])].append(row)
    out: list[Finding] = []
    for function, execs in sorted(by_function.items()):
        n = len(execs)
        if n < t["min_executables"]:
            continue
        sites: dict[tuple[str, int], int] = defaultdict(int)
        for row in execs:
            sites[(str(row["file"]), int(row.get("line") or 0))] += 1
        (file, line), at_site = max(sites.items(), key=lambda kv: (kv[1], -kv[0][1]))
        where = ", ".join(f"{f}:{ln} ({k})" for (f, ln), k in sorted(sites.items()))
        out.append(
            Finding(
                rule="jit_recompile",
                severity=Severity.WARNING if n >= t["warn_executables"] else Severity.INFO,
                title=f"jit({function}) was compiled {n} times",
                evidence=f"{n} XLA executables of jit({function}) ran, first traced from {where}; "
                f"{at_site} of them from {file}:{line}. JAX compiles anew for each new input shape, dtype or "
                "static argument value",
                file=file,
                line=line or None,
                fix="keep the inputs' shapes and dtypes stable (pad or bucket variable sizes), and pass values "
                "that change every call as arrays rather than static arguments",
                occurrences=n,
            )
        )
    return out
