"""torch.compile provenance: which original ops, modules and user lines each Inductor kernel fused.

One idea per module:

- :mod:`.api`: the private torch APIs (version check, probing, the only code that reads or writes
  them);
- :mod:`.capture`: :class:`CompileCapture`, installing and restoring hooks and config for a run;
- :mod:`.provenance`: pure parsing of FX node metadata into ``attribute.compiled.FusedOrigin`` /
  :class:`GraphRecord`, and the lookup of a profiled kernel's origins;
- :mod:`.diagnostics`: graph breaks, recompiles, compile times and the diagnostics document;
- :mod:`.runtime`: time in compiled graphs vs. eager, from the profiler's event tree.
"""

from __future__ import annotations

from .api import probe
from .capture import CompileCapture
from .diagnostics import GraphBreak, Recompile
from .provenance import GraphRecord, module_path, original_function, parse_stack, split_kernel_name
from .runtime import compiled_runtime

__all__ = [
    "CompileCapture",
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
