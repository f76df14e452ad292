"""Compatibility re-exports: torch.compile provenance lives in :mod:`kernelscope.collect.compile`.

Import from the package (or its modules) in new code. Patching ``probe`` here does not reach
:class:`CompileCapture`; patch :mod:`kernelscope.collect.compile.capture` instead.
"""

from __future__ import annotations

from .compile import (
    CompileCapture,
    FusedOrigin,
    GraphBreak,
    GraphRecord,
    Recompile,
    compiled_runtime,
    module_path,
    original_function,
    parse_stack,
    probe,
    split_kernel_name,
)

__all__ = [
    "CompileCapture",
    "FusedOrigin",
    "GraphBreak",
    "GraphRecord",
    "Recompile",
    "compiled_runtime",
    "module_path",
    "original_function",
    "parse_stack",
    "probe",
    "split_kernel_name",
]
