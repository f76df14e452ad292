"""Which Triton kernelscope can drive, and one clear error for any other."""

from __future__ import annotations

from typing import Any

from ...errors import BadInputError

MIN_VERSION = (3, 8)
# the interpreter internals the inspector wraps (FIELD-NOTES.md: private, they move between versions)
_BUILDER_METHODS = ("create_masked_load", "create_masked_store", "create_atomic_rmw", "create_dot", "set_grid_dim")


def _version_tuple(text: str) -> tuple[int, ...]:
    parts: list[int] = []
    for piece in text.split("+")[0].split(".")[:3]:
        digits = "".join(ch for ch in piece if ch.isdigit())
        if not digits:
            break
        parts.append(int(digits))
    return tuple(parts)


def triton_module() -> Any:
    """``import triton`` or a BadInputError saying how to get it."""
    try:
        import triton
    except ImportError as exc:
        raise BadInputError(f"Triton is not installed ({exc}); pip install 'kernelscope[triton]'") from None
    version = getattr(triton, "__version__", "")
    if _version_tuple(version) < MIN_VERSION:
        need = ".".join(map(str, MIN_VERSION))
        raise BadInputError(f"Triton {version} is too old: kernelscope needs Triton >= {need}")
    return triton


def interpreter_module() -> Any:
    """``triton.runtime.interpreter``, checked to have what the inspector wraps."""
    triton = triton_module()
    try:
        from triton.runtime import interpreter
    except Exception as exc:  # an import error inside Triton itself
        raise BadInputError(f"cannot load the Triton {triton.__version__} interpreter ({exc})") from None
    builder = getattr(interpreter, "interpreter_builder", None)
    executor = getattr(interpreter, "GridExecutor", None)
    missing = [m for m in _BUILDER_METHODS if not hasattr(builder, m)]
    if executor is None or not hasattr(executor, "_init_args_hst") or not hasattr(interpreter, "_implicit_cvt"):
        missing.append("GridExecutor._init_args_hst/_implicit_cvt")
    if missing:
        raise BadInputError(
            f"Triton {triton.__version__}'s interpreter lacks {', '.join(missing)}: "
            "kernelscope cannot drive this version (tested with 3.8.0 and 3.9.0)"
        )
    return interpreter


def launch_hooks() -> tuple[Any, Any]:
    """``triton.knobs.runtime`` launch enter/exit HookChains (``.add``/``.remove``)."""
    triton = triton_module()
    runtime = getattr(getattr(triton, "knobs", None), "runtime", None)
    enter = getattr(runtime, "launch_enter_hook", None)
    exit_ = getattr(runtime, "launch_exit_hook", None)
    if not all(hasattr(h, "add") and hasattr(h, "remove") for h in (enter, exit_)):
        raise BadInputError(
            f"Triton {triton.__version__} has no launch hook chains (triton.knobs.runtime.launch_enter_hook.add): "
            "kernelscope cannot drive this version"
        )
    return enter, exit_
