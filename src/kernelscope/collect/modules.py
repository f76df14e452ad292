"""nn.Module attribute paths (``blocks.1.attn.qkv``) for the modules a run calls."""

from __future__ import annotations

import warnings
from typing import Any


class ModuleRegistry:
    """Maps a module's id to its attribute path (``blocks.1.attn.qkv``).

    A global forward pre-hook remembers each module that runs; paths are worked
    out when a window is folded, from the outermost modules seen.
    """

    def __init__(self, on_call: Any = None, on_outer_call: Any = None) -> None:
        self._seen: dict[int, Any] = {}
        self._paths: dict[int, tuple[str, str]] = {}
        self._handles: list[Any] = []
        self._on_call = on_call  # called at every eager module call: a safe point between ops
        self._on_outer_call = on_outer_call  # called with the module as an outermost module call begins
        self.depth = 0  # eager module calls open on the main thread
        self.outer = on_outer_call is not None  # outermost calls are still looked for (step modules: steps.py)
        # module calls to let pass before ``on_call`` is called again (set by the session while a window records:
        # it asks the policy only every few milliseconds, and a call let pass here makes no Python call of its own)
        self.quiet = 0
        self._returned: Any = None  # the forward hook that keeps ``depth``: its handle ...
        # ... and the function, kept for the session: torch's Python tracer keeps pointers into the code objects
        # of the functions it recorded and reads them at the window's stop (a freed one comes back corrupt)
        self._functions: list[Any] = []

    def install(self) -> None:
        import threading

        import torch

        seen = self._seen
        is_compiling = torch.compiler.is_compiling
        on_call, on_outer_call = self._on_call, self._on_outer_call
        main, get_ident = threading.main_thread().ident, threading.get_ident
        registry = self

        # (as few calls as can be: inside a window torch's Python tracer records each one)
        def hook(module: Any, args: Any) -> None:
            # Under torch.compile tracing this is constant-folded away: recording the module
            # there would be a side effect Dynamo refuses. Compiled code gets its module paths
            # from Inductor's provenance instead.
            if not is_compiling():
                key = id(module)
                if key not in seen:
                    seen[key] = module
                if registry.outer and get_ident() == main:
                    registry.depth += 1
                    if registry.depth == 1:
                        on_outer_call(module)  # (first: a step that begins here begins before this call)
                if registry.quiet > 0:
                    registry.quiet -= 1
                elif on_call is not None:
                    on_call()

        def returned(module: Any, args: Any, output: Any) -> None:
            if not is_compiling() and registry.outer and get_ident() == main and registry.depth > 0:
                registry.depth -= 1

        self._functions = [hook, returned]
        hooks = torch.nn.modules.module
        self._handles = [hooks.register_module_forward_pre_hook(hook)]
        if self.outer:
            self._returned = hooks.register_module_forward_hook(returned, always_call=True)
        # torch warns that global hooks fire once more for an OptimizedModule: harmless for a
        # hook that only remembers modules, and noise in the user's output.
        warnings.filterwarnings("ignore", message=r"Using `torch.compile\(module\)` when there are global hooks")

    def no_outer_calls(self, remove: bool = True) -> None:
        """Outermost calls no longer matter (the steps come from elsewhere): the forward hook stops counting
        and, where ``remove``, goes, and with it a quarter of the calls a module call makes while a window
        records (torch's Python tracer records each). Not where torch.compile may have compiled a frame: it
        guards on the global hooks, and removing one would recompile it."""
        self.outer = False
        self.depth = 0
        if remove and self._returned is not None:
            self._returned.remove()
            self._returned = None

    def remove(self) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles = []
        self.no_outer_calls(remove=True)

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
