"""The advisor: rules that read a Profile and name problems, their evidence, the line and the saving.

A family of rules is one module in this package; each rule in it calls :func:`rule` on a function
``(profile, thresholds) -> list[Finding]``, declaring its documented, overridable thresholds and
where it applies. :func:`run_rules` runs them, groups what they found (one finding per rule and
place, with its occurrences and summed cost) and orders the groups by estimated saving.
Rules never mutate the profile.
"""

from __future__ import annotations

import enum
import importlib
import pkgutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from ...errors import UsageError
from ...model import Profile
from ..per_step import StepScale, per_step_view, scale_of, statement


class Severity(enum.Enum):
    INFO = "info"
    WARNING = "warning"
    ERROR = "error"

    @property
    def rank(self) -> int:
        return {"info": 0, "warning": 1, "error": 2}[self.value]


class Applies(enum.Enum):
    """Where a rule can fire: a CPU-only live run, an imported trace, a live run with a GPU."""

    CPU_RUN = "cpu_run"
    IMPORTED = "imported"
    GPU_RUN = "gpu_run"


EVERYWHERE = frozenset(Applies)
WITH_TIMELINE = frozenset({Applies.IMPORTED, Applies.GPU_RUN})


@dataclass(frozen=True)
class Finding:
    rule: str  # "graph_break"
    severity: Severity
    title: str  # one line: what is wrong
    evidence: str  # the numbers that show it, and where they come from
    file: str | None = None
    line: int | None = None
    module: str | None = None
    estimated_saving_ms: float | None = None
    fix: str = ""  # what to change
    saving_method: str = ""  # how the saving was estimated
    occurrences: int = 1  # events of this kind at this place
    nodes: tuple[int, ...] = ()  # profile nodes the evidence comes from
    device: str | None = None  # for device-wide findings: which device

    @property
    def place(self) -> tuple[str, str, int, str, str]:
        return (self.rule, self.file or "", self.line or 0, self.module or "", self.device or "")

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
        if self.device:
            out["device"] = self.device
        if self.estimated_saving_ms is not None:
            out["estimated_saving_ms"] = self.estimated_saving_ms
        if self.saving_method:
            out["saving_method"] = self.saving_method
        if self.fix:
            out["fix"] = self.fix
        out["occurrences"] = self.occurrences
        if self.nodes:
            out["nodes"] = list(self.nodes)
        return out


@dataclass(frozen=True)
class Threshold:
    default: float
    doc: str


Thresholds = Mapping[str, float]
RuleFn = Callable[[Profile, Thresholds], list[Finding]]


@dataclass(frozen=True)
class Rule:
    name: str
    family: str  # the module that holds it
    description: str
    check: RuleFn
    thresholds: Mapping[str, Threshold] = field(default_factory=dict)
    applies: frozenset[Applies] = EVERYWHERE


_REGISTRY: dict[str, Rule] = {}


def rule(
    name: str,
    description: str,
    thresholds: Mapping[str, Threshold] | None = None,
    applies: frozenset[Applies] = EVERYWHERE,
) -> Callable[[RuleFn], RuleFn]:
    """Register ``fn`` as the rule ``name`` (decorator)."""

    def register(fn: RuleFn) -> RuleFn:
        if name in _REGISTRY and _REGISTRY[name].check is not fn:
            raise ValueError(f"advisor rule {name!r} registered twice")
        family = fn.__module__.rsplit(".", 1)[-1]
        _REGISTRY[name] = Rule(name, family, description, fn, dict(thresholds or {}), applies)
        return fn

    return register


def _load_builtin_rules() -> None:
    for info in pkgutil.iter_modules(__path__):
        if not info.name.startswith("_"):
            importlib.import_module(f"{__name__}.{info.name}")


def rules() -> list[Rule]:
    _load_builtin_rules()
    return [_REGISTRY[name] for name in sorted(_REGISTRY)]


def run_kind(profile: Profile) -> Applies:
    """What kind of run a profile comes from: an imported trace, a live GPU run or a CPU-only run."""
    source = profile.metadata.get("source")
    fmt = source.get("format") if isinstance(source, dict) else None
    if fmt is not None and fmt != "torch-live":
        return Applies.IMPORTED
    return Applies.CPU_RUN if profile.metadata.get("device_run") is False else Applies.GPU_RUN


def resolve_thresholds(overrides: Mapping[str, float] | None, selected: list[Rule]) -> dict[str, dict[str, float]]:
    """Per rule: its thresholds with ``"rule.name"`` overrides applied. Unknown names are usage errors."""
    out = {r.name: {k: t.default for k, t in r.thresholds.items()} for r in selected}
    known = {f"{r.name}.{k}" for r in rules() for k in r.thresholds}
    for key, value in (overrides or {}).items():
        if key not in known:
            raise UsageError(f"unknown threshold {key!r}; known: {', '.join(sorted(known))}")
        rule_name, name = key.split(".", 1)
        if rule_name in out:
            out[rule_name][name] = float(value)
    return out


def run_rules(
    profile: Profile,
    only: set[str] | None = None,
    thresholds: Mapping[str, float] | None = None,
) -> list[Finding]:
    """All findings for ``profile``: one per (rule, place), ordered by estimated saving.

    ``only`` restricts the rules by name; ``thresholds`` overrides documented thresholds by
    ``"rule.threshold"`` name (see ``kernelscope analyze --list-rules``). The profile is not mutated.
    """
    kind = run_kind(profile)
    selected = [r for r in rules() if (only is None or r.name in only) and kind in r.applies]
    values = resolve_thresholds(thresholds, selected)
    scale = scale_of(profile.metadata)
    # a sample of whole steps is read per step (analysis.per_step): the rules see one mean step, so evidence,
    # thresholds and savings are per step and do not depend on how many steps the budget recorded
    view = per_step_view(profile, scale)
    findings: list[Finding] = []
    for r in selected:
        findings.extend(r.check(view if view is not None else profile, values[r.name]))
    return sorted(per_step_savings(group_findings(findings), scale, read_per_step=view is not None), key=_order)


def per_step_savings(findings: list[Finding], scale: StepScale, read_per_step: bool = False) -> list[Finding]:
    """In a sample of whole steps, savings are per step (``analysis.per_step``): what a step would save. Read as
    recorded (a timeline's spans are of the sample) they are divided here; ``read_per_step``: the rules read one
    mean step, and only the words are added."""
    words = statement(scale)
    if words is None:
        return findings
    factor = 1.0 if read_per_step else scale.factor
    return [
        f
        if f.estimated_saving_ms is None
        else replace(
            f,
            estimated_saving_ms=round(f.estimated_saving_ms * factor, 3),
            saving_method="; ".join(x for x in (f.saving_method, words) if x),
        )
        for f in findings
    ]


def group_findings(findings: list[Finding]) -> list[Finding]:
    """One finding per (rule, file, line, module, device): occurrences and savings add up, the costliest speaks."""
    groups: dict[tuple[str, str, int, str, str], list[Finding]] = {}
    for f in findings:
        groups.setdefault(f.place, []).append(f)
    out: list[Finding] = []
    for members in groups.values():
        if len(members) == 1:
            out.append(members[0])
            continue
        members.sort(key=lambda f: (-(f.estimated_saving_ms or 0.0), -f.severity.rank))
        lead = members[0]
        savings = [f.estimated_saving_ms for f in members if f.estimated_saving_ms is not None]
        occurrences = sum(f.occurrences for f in members)
        others = len({f.evidence for f in members}) - 1
        more = f"; {others} more like it at this place" if others > 0 else ""
        out.append(
            replace(
                lead,
                severity=max((f.severity for f in members), key=lambda s: s.rank),
                title=f"{lead.title} — {len(members)}× here",
                evidence=f"{lead.evidence}{more}",
                estimated_saving_ms=round(sum(savings), 3) if savings else None,
                occurrences=occurrences,
                nodes=tuple(sorted({n for f in members for n in f.nodes})),
            )
        )
    return out


def _order(f: Finding) -> tuple[float, int, str, str, int]:
    return (-(f.estimated_saving_ms or 0.0), -f.severity.rank, f.rule, f.file or "", f.line or 0)


def summary(findings: list[Finding], span_ms: float | None = None, per_step: bool = False) -> str:
    """The one line printed before the findings (``per_step``: savings and span are per step)."""
    if not findings:
        return "No findings."
    counts: dict[Severity, int] = {}
    for f in findings:
        counts[f.severity] = counts.get(f.severity, 0) + 1
    parts = ", ".join(f"{n} {s.value}" for s, n in sorted(counts.items(), key=lambda kv: -kv[0].rank))
    top = findings[0]
    text = f"{len(findings)} finding(s) ({parts}); top: {top.title}"
    if top.estimated_saving_ms:
        share = ""
        each = " per step" if per_step else ""
        if span_ms and top.estimated_saving_ms <= span_ms:  # compile time, e.g., lies outside the span
            share = f", {100 * top.estimated_saving_ms / span_ms:.0f}% of {span_ms:,.1f} ms measured{each}"
        text += f" (saves ~{top.estimated_saving_ms:,.1f} ms{each}{share})"
    return text


from ._evidence import measured_ms  # noqa: E402  (the span findings are measured against)

__all__ = [
    "EVERYWHERE",
    "WITH_TIMELINE",
    "Applies",
    "Finding",
    "Rule",
    "Severity",
    "Threshold",
    "Thresholds",
    "group_findings",
    "measured_ms",
    "per_step_savings",
    "rule",
    "rules",
    "run_kind",
    "run_rules",
    "summary",
]
