"""Which name-stack scopes are modules of a JAX neural-network library, read from what XLA keeps.

What the libraries put into ``op_name`` (checked on real HLO dumps; jax 0.10.2, flax 0.12.8, equinox
0.13.8, dm-haiku 0.0.17):

- **Flax linen** names each module's scope after the module: ``CNN/Conv_0`` (``Class_N`` for unnamed
  submodules, the given name otherwise); the top module's class has its ``__call__`` on the user stack.
- **Equinox** layers open ``jax.named_scope("eqx.nn.Linear")`` (their class, not the attribute holding
  them: two ``eqx.nn.Linear`` layers called from one line cannot be told apart); an ``eqx.Module`` the user
  wrote opens no scope (its ``__call__`` line is on the stack).
- **Haiku** wraps every module method in ``jax.named_call(name=<the module's own name>)``: ``sequential/
  linear_1`` (snake case of the class, ``_N`` for repeats, or the given name); Haiku's own frames are left
  out of JAX's tracebacks, so a Haiku layer's class is not on the stack. A scope is a Haiku module when it
  owns parameters (the executable's arguments are named ``params['linear_1']['w']``) or when its name is the
  snake case of a user class whose method is on the stack (``MyMLP.__call__`` → ``my_mlp``). A Haiku module
  without parameters of a library class (``hk.Sequential``, ``hk.Flatten``) stays a ``scope`` frame: nothing
  in the HLO tells it from a ``jax.named_scope``.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable
from dataclasses import dataclass

# Flax linen names unnamed submodules ``Class_N`` (``Conv_0``, ``Dense_1``): a module, of class ``Class``.
_AUTO_NAMED = re.compile(r"^(?P<cls>[A-Z][A-Za-z0-9]*)_\d+$")
# Equinox's layers name their scope ``eqx.nn.Class``.
_EQX = re.compile(r"^eqx\.nn\.(?P<cls>[A-Za-z_][A-Za-z0-9_]*)$")
# Haiku repeats: ``linear_1`` is the second ``linear``.
_REPEAT = re.compile(r"_\d+$")
_CAMEL = re.compile(r"((?<=[a-z0-9])[A-Z]|(?!^)[A-Z](?=[a-z]))")  # haiku/_src/utils.py's
# An argument's pytree path as JAX names a parameter: ``params['linear_1']['w']``, ``opt_state[0].mu['x']['b']``.
_KEY = re.compile(r"\['((?:[^'\\]|\\.)*)'\]|\[\d+\]|\.[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True, slots=True)
class ModuleNames:
    """The evidence about modules an executable carries."""

    classes: frozenset[str] = frozenset()  # classes whose methods are on the instructions' user stacks
    owners: frozenset[str] = frozenset()  # names of the dicts that directly hold parameters (Haiku, Flax)

    def with_classes(self, classes: Iterable[str]) -> ModuleNames:
        return ModuleNames(self.classes | frozenset(classes), self.owners)

    def module_class(self, name: str) -> str | None:
        """The module's class when the scope ``name`` is a module ("" when the class is not known), else None."""
        for pattern in (_AUTO_NAMED, _EQX):
            hit = pattern.match(name)
            if hit is not None:
                return hit.group("cls")
        if name in self.classes:
            return name
        base = _REPEAT.sub("", name)
        for cls in self.classes:
            if snake_case(cls) == base:
                return cls
        return "" if name in self.owners else None


def snake_case(cls: str) -> str:
    """Haiku's module naming (``utils.camel_to_snake``): ``MyMLP`` → ``my_mlp``, ``Conv2D`` → ``conv2_d``."""
    return _CAMEL.sub(r"_\1", cls).lower()


def parameter_owners(argument_names: Collection[str]) -> frozenset[str]:
    """Module names from the executable's argument paths: in ``params['mlp/~/linear_0']['w']`` the dict
    holding the leaf ``'w'`` is the module ``mlp/~/linear_0`` (Haiku's full name; ``~`` marks a method), so
    ``mlp`` and ``linear_0`` are modules. Only string-keyed leaves count (list items are not parameters)."""
    out: set[str] = set()
    for name in argument_names:
        keys = [m.group(1) for m in _KEY.finditer(name)]
        if len(keys) < 2 or keys[-1] is None or keys[-2] is None:
            continue
        out.update(part for part in keys[-2].split("/") if part and not part.startswith("~"))
    return frozenset(out)


__all__ = ["ModuleNames", "parameter_owners", "snake_case"]
