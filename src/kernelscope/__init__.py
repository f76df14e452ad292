"""kernelscope: where your model's time goes, from kernels back to your source lines."""

from __future__ import annotations

from typing import Any

from .model import Profile, load

__version__ = "0.1.0"

__all__ = [
    "Profile",
    "__version__",
    "activate",
    "deactivate",
    "finalize",
    "load",
    "profile",
    "scope",
    "start",
]


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext kernelscope``: the ``%%kernelscope`` cell magic (notebook.py)."""
    from .notebook import load_ipython_extension as load

    load(ipython)


def __getattr__(name: str) -> Any:
    # The live API needs torch; import it only when asked for.
    if name in {"profile", "start", "finalize", "activate", "deactivate", "scope", "step"}:
        from .collect import api

        return getattr(api, name)
    raise AttributeError(name)
