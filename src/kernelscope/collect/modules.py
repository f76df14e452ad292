"""nn.Module attribute paths (``blocks.1.attn.qkv``) for the modules a run calls."""

from __future__ import annotations

import warnings
from typing import Any


class ModuleRegistry:
    """Maps a module's id to its attribute path (``blocks.1.attn.qkv``).

    A global forward pre-hook remembers each module that runs; paths are worked
    out when a window is folded, from the outermost modules seen.
    """

    def __init__(self, on_call: Any = None) -> None:
        self._seen: dict[int, Any] = {}
        self._paths: dict[int, tuple[str, str]] = {}
        self._handle: Any = None
        self._on_call = on_call  # called at every eager module call: a safe point between ops

    def install(self) -> None:
        import torch

        seen = self._seen
        is_compiling = torch.compiler.is_compiling
        on_call = self._on_call

        def hook(module: Any, args: Any) -> None:
            # Under torch.compile tracing this is constant-folded away: recording the module
            # there would be a side effect Dynamo refuses. Compiled code gets its module paths
            # from Inductor's provenance instead.
            if not is_compiling():
                seen.setdefault(id(module), module)
                if on_call is not None:
                    on_call()

        self._handle = torch.nn.modules.module.register_module_forward_pre_hook(hook)
        # torch warns that global hooks fire once more for an OptimizedModule: harmless for a
        # hook that only remembers modules, and noise in the user's output.
        warnings.filterwarnings("ignore", message=r"Using `torch.compile\(module\)` when there are global hooks")

    def remove(self) -> None:
        if self._handle is not None:
            self._handle.remove()
            self._handle = None

    def resolve(self) -> None:
        if len(self._paths) >= len(self._seen):
            return
        children: set[int] = set()
        for mod in self._seen.values():
            for _, sub in mod.named_modules():
                if sub is not mod:
                    children.add(id(sub))
        for key, mod in self._seen.items():
            if key in children:
                continue
            root_name = type(mod).__name__
            for name, sub in mod.named_modules():
                self._paths.setdefault(id(sub), (name or root_name, type(sub).__name__))

    def path(self, self_ptr: int) -> tuple[str, str] | None:
        return self._paths.get(self_ptr)
