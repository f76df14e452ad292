"""The tools the server offers. A new tool is one function in ``tools/`` decorated with :func:`tool`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

ToolFn = Callable[..., dict[str, Any]]


@dataclass(frozen=True)
class ToolSpec:
    name: str
    fn: ToolFn
    description: str


_TOOLS: dict[str, ToolSpec] = {}


def tool(name: str) -> Callable[[ToolFn], ToolFn]:
    """Register ``fn`` as the tool ``name``; its docstring is the description agents read."""

    def decorator(fn: ToolFn) -> ToolFn:
        if name in _TOOLS:
            raise ValueError(f"tool {name!r} registered twice")
        _TOOLS[name] = ToolSpec(name, fn, " ".join((fn.__doc__ or "").split()))
        return fn

    return decorator


def tools() -> list[ToolSpec]:
    from . import tools as _modules  # noqa: F401  (importing the package registers every tool)

    return list(_TOOLS.values())
