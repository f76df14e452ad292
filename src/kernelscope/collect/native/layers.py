"""Which layer of the host software a native sample was in: one rule over the sample's native frames.

The rule (documented in docs/native.md): walk the native frames below the innermost Python frame from the
innermost outwards; the first frame that one of these tests claims decides, in this order per frame:

1. **kernel library (LIB)**: the frame's symbol is a vendor kernel library's, linked into torch
   (``mkl_``/``MKL_``: LIB = MKL; ``dnnl``/``mkldnn``/``ideep``: oneDNN; ``sgemm_``/``dgemm_``/``cblas_``: BLAS),
   or its shared object is a kernel library: a BLAS/LAPACK/oneDNN/MKL/SLEEF build (``openblas``, ``mkl``,
   ``dnnl``, ``blas``, ``sleef``, ``xsmm``), the OpenMP runtime the kernels run their threads on (``gomp``,
   ``iomp``, ``libomp``), or Inductor's generated code (a shared object under a ``torchinductor`` cache
   folder). LIB is then its file name.
2. **allocator**: the symbol is an allocator's (``malloc``, ``free``, ``calloc``, ``realloc``,
   ``posix_memalign``, ``c10::alloc_cpu``, ``c10::free_cpu``, ``*Allocator*``, ``at::detail::empty``).
3. **kernel library (ATen native)**: the symbol is ATen's CPU kernel code (``at::native::``, ``at::vec``,
   ``at::internal::``, ``at::parallel_for``/``at::vectorized_loop``, ``mkldnn``).
4. **autograd engine**: ``torch::autograd::Engine``, ``torch::autograd::Node``, ``AccumulateGrad``,
   ``torch::autograd::generated::`` (the backward nodes), ``torch::autograd::InputBuffer``.
5. **torch dispatch and argument handling**: ``c10::Dispatcher``, ``c10::impl::``, ``c10::OperatorHandle``,
   ``at::_ops::``, ``torch::autograd::VariableType``, ``torch::ADInplaceOrView``, ``THPVariable_``,
   ``torch::PythonArgParser``, ``torch::utils::``, ``pybind11``, any symbol of ``libtorch_python``.
6. **profiler**: torch's profiler recording the op (``torch::profiler::``, ``libkineto``, ``at::RecordFunction``):
   the cost of recording, in the op's time as torch measures it.
7. **Python interpreter**: a symbol of the interpreter (``_PyEval``, ``PyObject_``, ``_PyObject``,
   ``PyEval``, ``_Py``, ``Py``-prefixed C API) or a frame in ``libpython``/the ``python`` executable.

Frames no test claims (libc's ``memcpy``, ``std::`` helpers, unresolved addresses) are passed over; a sample
that no frame decides is **other**. A sample with no native frame below its innermost Python frame (the
interpreter between ops) is **Python interpreter**.
"""

from __future__ import annotations

import os
import re

PYTHON = "Python interpreter"
DISPATCH = "torch dispatch/args"
AUTOGRAD = "autograd engine"
ALLOCATOR = "allocator"
PROFILER = "profiler (recording)"
OTHER = "other"
KERNEL_PREFIX = "kernel library: "
ATEN = KERNEL_PREFIX + "ATen native"
LAYERS_FIXED = (PYTHON, DISPATCH, AUTOGRAD, ALLOCATOR, PROFILER, OTHER)
_PROFILER = re.compile(
    r"^torch::profiler::|^libkineto::|^at::RecordFunction|^at::(?:anonymous namespace)?::?RecordFunction"
)

_KERNEL_LIBS = re.compile(r"openblas|mkl|dnnl|blas|lapack|sleef|xsmm|cublas|cudnn|gomp|iomp|libomp", re.IGNORECASE)
_KERNEL_SYMBOLS = (
    (re.compile(r"^(?:mkl_|MKL_)"), "MKL"),
    (re.compile(r"dnnl|mkldnn|ideep"), "oneDNN"),
    (re.compile(r"^(?:[sdcz]gemm_|cblas_|[sd]gemv_)"), "BLAS"),
)
_ALLOC = re.compile(
    r"^(?:__libc_)?(?:malloc|free|calloc|realloc|posix_memalign|aligned_alloc|memalign)$"
    r"|^c10::(?:alloc_cpu|free_cpu)|Allocator|^at::detail::empty|^at::empty_cpu"
)
_ATEN = re.compile(
    r"^at::(?:native::|vec::|internal::|parallel_for|vectorized_loop|TensorIteratorBase::(?:for_each|serial_for_each))"
    r"|^at::\(anonymous namespace\)::.*kernel|^c10::function_ref<void \(char\*\*"
)
_AUTOGRAD = re.compile(
    r"^torch::autograd::(?:Engine|Node|InputBuffer|generated::|AccumulateGrad|impl::|CppNode|python::PythonEngine)"
    r"|^torch::autograd::(?:call_function|validate_outputs)"
)
_DISPATCH = re.compile(
    r"^c10::(?:Dispatcher|impl::|OperatorHandle|BoxedKernel|KernelFunction)|^at::_ops::|^at::redispatch"
    r"|VariableType|ADInplaceOrView|^THPVariable_|^torch::(?:PythonArgParser|utils::|FunctionSignature|autograd::utils::)"
    r"|^pybind11|^torch::jit::"
)
_PY_SYMBOL = re.compile(r"^_?Py[A-Z_]|^_PyEval|^method_vectorcall|^cfunction_|^slot_tp|^vectorcall")


def is_kernel_library(library_path: str) -> bool:
    base = os.path.basename(library_path)
    if _KERNEL_LIBS.search(base):
        return True
    return "torchinductor" in library_path and base.endswith(".so")


def frame_layer(symbol: str, library_path: str) -> str | None:
    """The layer one native frame claims, or None (passed over)."""
    if library_path and is_kernel_library(library_path):
        return KERNEL_PREFIX + os.path.basename(library_path)
    for pattern, name in _KERNEL_SYMBOLS:
        if pattern.search(symbol):
            return KERNEL_PREFIX + name
    if _ALLOC.search(symbol):
        return ALLOCATOR
    if _ATEN.search(symbol):
        return ATEN
    if _AUTOGRAD.search(symbol):
        return AUTOGRAD
    if _PROFILER.search(symbol) or "kineto" in library_path:
        return PROFILER
    base = os.path.basename(library_path)
    if _DISPATCH.search(symbol) or base.startswith("libtorch_python"):
        return DISPATCH
    if _PY_SYMBOL.search(symbol) or base.startswith("libpython") or re.match(r"python3?(\.\d+)?$", base):
        return PYTHON
    return None


def sample_layer(native: list[tuple[str, str]]) -> str:
    """``native``: the (symbol, library path) frames below the innermost Python frame, outermost first."""
    if not native:
        return PYTHON
    for symbol, library in reversed(native):
        layer = frame_layer(symbol, library)
        if layer is not None:
            return layer
    return OTHER
