"""Advisor findings as terminal text (rich): the summary line, then one block per finding by saving."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console
from rich.markup import escape

from ..analysis.advisor import Finding, Rule, Severity

_STYLE = {Severity.ERROR: "bold red", Severity.WARNING: "yellow", Severity.INFO: "cyan"}


def where(f: Finding) -> str:
    parts: list[str] = []
    if f.file:
        parts.append(f"{f.file}:{f.line}" if f.line else f.file)
    if f.module:
        parts.append(f.module)
    return "  ".join(parts)


def render_findings(console: Console, findings: Sequence[Finding], source: str = "", summary: str = "") -> None:
    if not findings:
        console.print(f"No findings{f' for {escape(source)}' if source else ''}.")
        return
    if summary:
        console.print(f"[bold]{escape(summary)}[/bold]", overflow="fold")
    if source:
        console.print(f"[dim]{escape(source)}[/dim]")
    for f in findings:
        console.print()
        tag = f"[{_STYLE[f.severity]}]{f.severity.value.upper():7}[/]"
        console.print(f"{tag} [bold]{escape(f.title)}[/bold]  [dim]({escape(f.rule)})[/dim]", overflow="fold")
        loc = where(f)
        if loc:
            console.print(f"        at {escape(loc)}", overflow="fold")
        console.print(f"        {escape(f.evidence)}", overflow="fold")
        if f.estimated_saving_ms:
            method = f" [dim]({escape(f.saving_method)})[/dim]" if f.saving_method else ""
            console.print(f"        estimated saving: {f.estimated_saving_ms:,.3f} ms{method}", overflow="fold")
        if f.fix:
            console.print(f"        fix: {escape(f.fix)}", overflow="fold")


def render_rules(console: Console, rules: Sequence[Rule]) -> None:
    for r in rules:
        applies = ", ".join(sorted(a.value for a in r.applies))
        console.print(f"[bold]{escape(r.name)}[/bold] [dim]({escape(r.family)}; {applies})[/dim]")
        console.print(f"    {escape(r.description)}", overflow="fold")
        for name, t in r.thresholds.items():
            console.print(
                f"    {escape(r.name)}.{escape(name)} = {t.default:g}  [dim]{escape(t.doc)}[/dim]", overflow="fold"
            )
