"""Which layer of the host software a native sample was in: one rule over the sample's native frames.

The rule (documented in docs/native.md): walk the native frames below the innermost Python frame from the
innermost outwards; the first frame that one of these tests claims decides, in this order per frame:

0. A frame of Inductor's generated code (its file under a ``torchinductor`` cache folder) is
   **kernel library: Inductor generated code**; a frame py-spy names by a source or header file
   (``avx512fintrin.h``, ``vec512_float.h``: code inlined into the frame around it) is passed over: the frame it
   was inlined into decides.
1. **kernel library (LIB)**: its shared object is a kernel library: a BLAS/LAPACK/oneDNN/MKL/SLEEF build
   (``openblas``, ``mkl``, ``dnnl``, ``blas``, ``sleef``, ``xsmm``) or the OpenMP runtime the kernels run their
   threads on (``gomp``, ``iomp``, ``libomp``), LIB = its file name; or its symbol is a vendor library's linked
   into torch (``mkl_``/``MKL_``: LIB = MKL; ``dnnl``/``mkldnn``/``ideep``: oneDNN;
   ``sgemm_``/``dgemm_``/``cblas_``: BLAS; ``Sleef_``: SLEEF).
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
    (re.compile(r"Sleef_"), "SLEEF"),
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


INDUCTOR = KERNEL_PREFIX + "Inductor generated code"
_SOURCE = re.compile(r"\.(?:h|hh|hpp|hxx|c|cc|cpp|cxx|inl|tcc)$|/include/")


def is_kernel_library(library_path: str) -> bool:
    return bool(_KERNEL_LIBS.search(os.path.basename(library_path)))


def frame_layer(symbol: str, library_path: str) -> str | None:
    """The layer one native frame claims, or None (passed over)."""
    if "torchinductor" in library_path:
        return INDUCTOR
    if _SOURCE.search(library_path):
        return None  # an inlined frame (py-spy names its source file): the frame it was inlined into decides
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
