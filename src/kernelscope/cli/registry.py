"""The verbs. A new verb is one new module in this package and one line here."""

from __future__ import annotations

import importlib

from .command import Command

_VERBS = (
    "run",
    "view",
    "import_",
    "timeline",
    "analyze",
    "diff",
    "report",
    "export",
    "triton",
    "ranks",
    "history",
    "mcp",
)


def commands(verb: str | None = None) -> list[Command]:
    """Every verb's command; only ``verb``'s when it names one (``kernelscope run ...`` imports no other
    verb's module: a profiled program's start-up pays for one)."""
    wanted = f"{verb}_" if verb == "import" else verb
    out: list[Command] = []
    for mod_name in (wanted,) if wanted in _VERBS else _VERBS:
        try:
            mod = importlib.import_module(f"{__package__}.{mod_name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"{__package__}.{mod_name}":
                continue  # verb not built yet
            raise
        out.append(mod.COMMAND)
    return out
