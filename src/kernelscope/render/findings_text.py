"""Advisor findings as terminal text (rich): one block per finding, most severe first."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console
from rich.markup import escape

from ..analysis.advisor import Finding, Severity

_STYLE = {Severity.ERROR: "bold red", Severity.WARNING: "yellow", Severity.INFO: "cyan"}


def where(f: Finding) -> str:
    parts: list[str] = []
    if f.file:
        parts.append(f"{f.file}:{f.line}" if f.line else f.file)
    if f.module:
        parts.append(f.module)
    return "  ".join(parts)


def render_findings(console: Console, findings: Sequence[Finding], source: str = "") -> None:
    if not findings:
        console.print(f"No findings{f' for {escape(source)}' if source else ''}.")
        return
    counts: dict[Severity, int] = {}
    for f in findings:
        counts[f.severity] = counts.get(f.severity, 0) + 1
    summary = ", ".join(f"{n} {s.value}" for s, n in sorted(counts.items(), key=lambda kv: -kv[0].rank))
    console.print(f"[bold]{len(findings)} finding(s)[/bold] ({summary}){f' in {escape(source)}' if source else ''}")
    for f in findings:
        console.print()
        tag = f"[{_STYLE[f.severity]}]{f.severity.value.upper():7}[/]"
        console.print(f"{tag} [bold]{escape(f.title)}[/bold]  [dim]({escape(f.rule)})[/dim]")
        loc = where(f)
        if loc:
            console.print(f"        at {escape(loc)}")
        console.print(f"        {escape(f.evidence)}", overflow="fold")
        if f.estimated_saving_ms:
            console.print(f"        estimated saving: {f.estimated_saving_ms:,.3f} ms")
