"""JAX name stacks: what an HLO instruction's ``op_name`` says about where it came from.

``jit(train_step)/transpose(jvp(mlp))/dot_general`` reads as: traced inside the jitted function
``train_step`` (the region), in the transpose of a JVP (backward work), under the user scope ``mlp``,
and it is the primitive ``dot_general``. Components are separated by ``/`` outside parentheses;
transforms wrap scopes (``jvp(...)``, ``vmap(...)``, ``transpose(jvp(...))``).
"""

from __future__ import annotations

from dataclasses import dataclass

# Transformations that wrap a scope name; ``transpose`` is the one that makes backward work.
_TRANSFORMS = frozenset({"jvp", "transpose", "vmap", "pmap", "xmap", "remat", "checkpoint", "custom_jvp", "custom_vjp"})


@dataclass(frozen=True, slots=True)
class NameStack:
    region: str  # the outermost jitted function, e.g. "jit(train_step)"; "" when none
    backward: bool  # under a transpose(...) transform
    scopes: tuple[str, ...]  # user scopes between the region and the primitive (named_scope, einsum specs)
    primitive: str  # the JAX primitive, e.g. "dot_general"; "" when the stack names none

    @property
    def function(self) -> str:
        """The jitted function's name (``train_step`` for ``jit(train_step)``)."""
        return _inner(self.region) if self.region else ""


def split_components(op_name: str) -> list[str]:
    """``a(b/c)/d`` -> ``["a(b/c)", "d"]``: split on ``/`` outside parentheses."""
    out: list[str] = []
    depth = 0
    start = 0
    for i, ch in enumerate(op_name):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth = max(depth - 1, 0)
        elif ch == "/" and depth == 0:
            out.append(op_name[start:i])
            start = i + 1
    out.append(op_name[start:])
    return [c for c in out if c]


def _head(component: str) -> str:
    cut = component.find("(")
    return component if cut < 0 or not component.endswith(")") else component[:cut]


def _inner(component: str) -> str:
    cut = component.find("(")
    return component[cut + 1 : -1] if cut >= 0 and component.endswith(")") else ""


def _unwrap(component: str) -> tuple[bool, str]:
    """Peel transforms off one component: (backward?, the scope inside, "" when none)."""
    backward = False
    while component.endswith(")"):
        head = _head(component)
        if head not in _TRANSFORMS:
            return backward, component
        backward = backward or head == "transpose"
        component = _inner(component)
    return backward, component


def parse(op_name: str) -> NameStack:
    """Parse an ``op_name``. The last component is the primitive unless it is a transform or a jit.
    XLA joins the names of instructions it merged with ``;`` (``.../mul;.../broadcast_in_dim``): the first
    one is read."""
    parts = split_components(op_name.split(";", 1)[0].strip())
    region = ""
    if parts and _head(parts[0]) in ("jit", "pjit"):
        region = parts.pop(0)
    primitive = ""
    if parts:
        last_backward, last = _unwrap(parts[-1])
        if not last_backward and last == parts[-1] and _head(last) not in ("jit", "pjit"):
            primitive = parts.pop()
    backward = False
    scopes: list[str] = []
    for part in parts:
        is_backward, scope = _unwrap(part)
        backward = backward or is_backward
        if scope:
            scopes.append(scope)
    return NameStack(region=region, backward=backward, scopes=tuple(scopes), primitive=primitive)


__all__ = ["NameStack", "parse", "split_components"]
