"""The advisor: rules that read a Profile and name problems, their evidence and the line to change.

One rule is one module in this package that calls :func:`rule` on a function
``(profile) -> list[Finding]``. :func:`run_rules` imports the built-in rules, runs them all and
returns their findings, most severe and most costly first. Rules never mutate the profile.
"""

from __future__ import annotations

import enum
import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ...model import Profile


class Severity(enum.Enum):
    INFO = "info"
    WARNING = "warning"
    ERROR = "error"

    @property
    def rank(self) -> int:
        return {"info": 0, "warning": 1, "error": 2}[self.value]


@dataclass(frozen=True)
class Finding:
    rule: str  # "graph_break"
    severity: Severity
    title: str  # one line: what is wrong
    evidence: str  # what in the profile shows it
    file: str | None = None
    line: int | None = None
    module: str | None = None
    estimated_saving_ms: float | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "rule": self.rule,
            "severity": self.severity.value,
            "title": self.title,
            "evidence": self.evidence,
        }
        if self.file:
            out["file"] = self.file
        if self.line:
            out["line"] = self.line
        if self.module:
            out["module"] = self.module
        if self.estimated_saving_ms is not None:
            out["estimated_saving_ms"] = self.estimated_saving_ms
        return out


RuleFn = Callable[[Profile], list[Finding]]


@dataclass(frozen=True)
class Rule:
    name: str
    description: str
    check: RuleFn


_REGISTRY: dict[str, Rule] = {}


def rule(name: str, description: str) -> Callable[[RuleFn], RuleFn]:
    """Register ``fn`` as the rule ``name`` (decorator)."""

    def register(fn: RuleFn) -> RuleFn:
        if name in _REGISTRY and _REGISTRY[name].check is not fn:
            raise ValueError(f"advisor rule {name!r} registered twice")
        _REGISTRY[name] = Rule(name, description, fn)
        return fn

    return register


def _load_builtin_rules() -> None:
    for info in pkgutil.iter_modules(__path__):
        if not info.name.startswith("_"):
            importlib.import_module(f"{__name__}.{info.name}")


def rules() -> list[Rule]:
    _load_builtin_rules()
    return [_REGISTRY[name] for name in sorted(_REGISTRY)]


def run_rules(profile: Profile, only: set[str] | None = None) -> list[Finding]:
    findings: list[Finding] = []
    for r in rules():
        if only is None or r.name in only:
            findings.extend(r.check(profile))
    return sorted(findings, key=_order)


def _order(f: Finding) -> tuple[int, float, str, str, int]:
    return (-f.severity.rank, -(f.estimated_saving_ms or 0.0), f.rule, f.file or "", f.line or 0)


__all__ = ["Finding", "Rule", "Severity", "rule", "rules", "run_rules"]
