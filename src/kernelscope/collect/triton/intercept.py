"""Record every load, store, atomic and ``tl.dot`` the Triton interpreter executes.

The interpreter (``TRITON_INTERPRET=1``) runs a kernel once per program id and sends memory ops to
``triton.runtime.interpreter.interpreter_builder`` with absolute addresses and masks as numpy arrays.
``Inspector.install()`` wraps those builder methods (instance attributes, so the class is untouched),
the grid executor (to see each launch, its host arguments and grid) and ``_implicit_cvt`` (to tag
each pointer argument with its name, a tag that pointer arithmetic carries along). ``remove()``
restores everything.

Out-of-bounds lanes are recorded and then masked off before the real load/store runs, so a buggy
kernel is reported instead of corrupting memory or crashing the interpreter; such loads read
``other`` (or 0).
"""

from __future__ import annotations

import inspect
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from types import CodeType
from typing import Any

import numpy as np
import numpy.typing as npt

from ...attribute.userframes import display_path, is_user_file
from .compat import interpreter_module
from .helpers import InterpretedHelpers
from .records import ATOMIC, DOT, LOAD, STORE, Access, ArgInfo, Launch, Program

SECTOR = 32  # bytes per memory transaction sector on NVIDIA and AMD GPUs
TAG = "kernelscope_arg"
# builder methods whose result is a pointer block derived from their first pointer operand
_PROPAGATE = (
    "create_splat",
    "create_unsplat",
    "create_broadcast",
    "create_expand_dims",
    "create_reshape",
    "create_trans",
    "create_permute",
    "create_cat",
    "create_join",
    "create_addptr",
)
_KS_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


MAX_CALLERS = 2  # user lines kept above a launch line


@dataclass
class _LaunchState:
    kernel: str
    kernel_file: str
    file: str
    line: int
    callers: tuple[tuple[str, int], ...] = ()
    grid: Program = (1, 1, 1)
    args: list[ArgInfo] = field(default_factory=list)
    by_id: dict[int, str] = field(default_factory=dict)
    keep: list[Any] = field(default_factory=list)  # host tensors, so their ids stay unique


class Inspector:
    """Collects ``Launch`` and ``Access`` records while installed."""

    def __init__(self) -> None:
        self.launches: list[Launch] = []
        self.accesses: list[Access] = []
        self._state: _LaunchState | None = None
        self._undo: list[Callable[[], None]] = []
        self._lib_dirs: tuple[str, ...] = ()
        self._code_is_lib: dict[CodeType, bool] = {}
        self._builder: Any = None
        self._helpers: InterpretedHelpers | None = None

    # --- install / remove -------------------------------------------------------------
    def install(self) -> None:
        interp = interpreter_module()
        import triton

        self._lib_dirs = (
            os.path.dirname(os.path.abspath(triton.__file__)) + os.sep,
            os.path.dirname(os.path.abspath(np.__file__)) + os.sep,
            _KS_DIR + os.sep,
        )
        builder = self._builder = interp.interpreter_builder
        ge = interp.GridExecutor
        self._patch_class(ge, "__call__", self._wrap_call(ge.__call__))
        self._patch_class(ge, "_init_args_hst", self._wrap_init_args(ge._init_args_hst))
        self._patch_class(interp, "_implicit_cvt", self._wrap_cvt(interp._implicit_cvt))
        self._patch_instance(builder, "set_grid_dim", self._wrap_grid(builder.set_grid_dim))
        self._patch_instance(builder, "create_masked_load", self._wrap_load(builder.create_masked_load))
        self._patch_instance(builder, "create_masked_store", self._wrap_store(builder.create_masked_store))
        self._patch_instance(builder, "create_atomic_rmw", self._wrap_rmw(builder.create_atomic_rmw))
        self._patch_instance(builder, "create_atomic_cas", self._wrap_cas(builder.create_atomic_cas))
        self._patch_instance(builder, "create_dot", self._wrap_dot(builder.create_dot))
        for name in _PROPAGATE:
            if hasattr(builder, name):
                self._patch_instance(builder, name, self._wrap_propagate(getattr(builder, name)))
        helpers = InterpretedHelpers()
        helpers.install()
        self._undo.append(helpers.remove)
        self._helpers = helpers

    def remove(self) -> None:
        while self._undo:
            self._undo.pop()()

    def _patch_class(self, owner: Any, name: str, value: Any) -> None:
        old = owner.__dict__[name]
        setattr(owner, name, value)
        self._undo.append(lambda: setattr(owner, name, old))

    def _patch_instance(self, obj: Any, name: str, value: Any) -> None:
        had = name in obj.__dict__
        old = obj.__dict__.get(name)
        obj.__dict__[name] = value
        self._undo.append(lambda: obj.__dict__.__setitem__(name, old) if had else obj.__dict__.pop(name, None))

    # --- launches ---------------------------------------------------------------------
    def _wrap_call(self, orig: Callable[..., Any]) -> Callable[..., Any]:
        def call(executor: Any, *args: Any, **kwargs: Any) -> Any:
            fn = executor.fn
            (file, line), *callers = self._launch_lines()
            outer, self._state = (
                self._state,
                _LaunchState(fn.__name__, fn.__code__.co_filename, file, line, tuple(callers)),
            )
            try:
                if self._helpers is None:
                    return orig(executor, *args, **kwargs)
                with self._helpers.active():
                    return orig(executor, *args, **kwargs)
            finally:
                st, self._state = self._state, outer
                self.launches.append(
                    Launch(
                        len(self.launches),
                        st.kernel,
                        st.kernel_file,
                        st.file,
                        st.line,
                        st.grid,
                        tuple(st.args),
                        st.callers,
                    )
                )

        return call

    def _wrap_init_args(self, orig: Callable[..., Any]) -> Callable[..., Any]:
        def init_args(executor: Any, args_dev: Any, kwargs: Any) -> Any:
            args_hst, kwargs_hst = orig(executor, args_dev, kwargs)
            st = self._state
            if st is not None:
                bound = inspect.signature(executor.fn).bind_partial(*args_hst, **kwargs_hst).arguments
                for name, value in bound.items():
                    if hasattr(value, "data_ptr"):
                        st.args.append(_arg_info(name, value))
                        st.by_id[id(value)] = name
                        st.keep.append(value)
            return args_hst, kwargs_hst

        return init_args

    def _wrap_cvt(self, orig: Callable[[Any], Any]) -> Callable[[Any], Any]:
        def cvt(arg: Any) -> Any:
            out = orig(arg)
            st = self._state
            if st is not None and id(arg) in st.by_id and hasattr(out, "handle"):
                out.handle.attr[TAG] = st.by_id[id(arg)]
            return out

        return cvt

    def _wrap_grid(self, orig: Callable[..., Any]) -> Callable[..., Any]:
        def set_grid_dim(nx: int, ny: int, nz: int) -> Any:
            if self._state is not None:
                self._state.grid = (int(nx), int(ny), int(nz))
            return orig(nx, ny, nz)

        return set_grid_dim

    # --- memory ops ---------------------------------------------------------------------
    def _wrap_load(self, orig: Callable[..., Any]) -> Callable[..., Any]:
        # the trailing cache/eviction/volatile arguments differ between Triton versions: passed through
        def load(ptrs: Any, mask: Any, other: Any, *rest: Any, **kwargs: Any) -> Any:
            safe = self._record(LOAD, ptrs, mask.data)
            if safe is not None:
                mask = type(mask)(safe, mask.dtype)
            return orig(ptrs, mask, other, *rest, **kwargs)

        return load

    def _wrap_store(self, orig: Callable[..., Any]) -> Callable[..., Any]:
        def store(ptrs: Any, value: Any, mask: Any, *rest: Any, **kwargs: Any) -> Any:
            safe = self._record(STORE, ptrs, mask.data)
            if safe is not None:
                mask = type(mask)(safe, mask.dtype)
            return orig(ptrs, value, mask, *rest, **kwargs)

        return store

    def _wrap_rmw(self, orig: Callable[..., Any]) -> Callable[..., Any]:
        def rmw(op: Any, ptr: Any, val: Any, mask: Any, *rest: Any, **kwargs: Any) -> Any:
            safe = self._record(ATOMIC, ptr, mask.data)
            if safe is not None:
                mask = type(mask)(safe, mask.dtype)
            return orig(op, ptr, val, mask, *rest, **kwargs)

        return rmw

    def _wrap_cas(self, orig: Callable[..., Any]) -> Callable[..., Any]:
        def cas(ptr: Any, *rest: Any, **kwargs: Any) -> Any:
            # no mask to narrow: an out-of-bounds compare-and-swap is reported, then runs as written
            self._record(ATOMIC, ptr, np.ones(np.shape(ptr.data), dtype=bool))
            return orig(ptr, *rest, **kwargs)

        return cas

    def _wrap_dot(self, orig: Callable[..., Any]) -> Callable[..., Any]:
        def dot(a: Any, b: Any, d: Any, *rest: Any) -> Any:
            st = self._state
            if st is not None:
                a_shape, b_shape = np.shape(a.data), np.shape(b.data)
                shape = (int(a_shape[-2]), int(b_shape[-1]), int(a_shape[-1]))
                file, line = self._kernel_line()
                self.accesses.append(
                    Access(len(self.launches), self._program(), DOT, file, line, None, dot_shape=shape)
                )
            return orig(a, b, d, *rest)

        return dot

    def _wrap_propagate(self, orig: Callable[..., Any]) -> Callable[..., Any]:
        def propagate(*args: Any) -> Any:
            out = orig(*args)
            tag = next((a.attr[TAG] for a in args if hasattr(a, "attr") and TAG in a.attr), None)
            if tag is not None and hasattr(out, "attr"):
                out.attr[TAG] = tag
            return out

        return propagate

    def _record(self, op: str, ptrs: Any, mask: npt.NDArray[np.bool_]) -> npt.NDArray[np.bool_] | None:
        """Record one access; return a mask without its out-of-bounds lanes when it has any."""
        st = self._state
        if st is None or not st.args:
            return None
        addr = np.asarray(ptrs.data, dtype=np.uint64)
        mask = np.broadcast_to(np.asarray(mask, dtype=bool), addr.shape)
        itemsize = max(1, ptrs.get_element_ty().primitive_bitwidth // 8)
        live = addr[mask]
        arg = _which_arg(st.args, ptrs.attr.get(TAG), live if live.size else addr.ravel(), itemsize)
        inside = arg.contains(live, itemsize)
        good = live[inside]
        oob = int(live.size - good.size)
        oob_first = int((live[~inside][0].astype(np.int64) - arg.base) // itemsize) if oob else 0
        uniq = _unique(good)
        offsets = (good.astype(np.int64) - arg.base) // itemsize if op != LOAD else None
        file, line = self._kernel_line()
        self.accesses.append(
            Access(
                launch=len(self.launches),
                program=self._program(),
                op=op,
                file=file,
                line=line,
                arg=arg.name,
                itemsize=itemsize,
                lanes=int(addr.size),
                active=int(live.size),
                oob=oob,
                oob_first=oob_first,
                sectors=int(_unique(uniq // SECTOR).size),
                min_sectors=-(-int(uniq.size) * itemsize // SECTOR),
                elements=offsets,
            )
        )
        if not oob:
            return None
        safe: npt.NDArray[np.bool_] = mask & arg.contains(addr, itemsize)
        return safe

    # --- where ------------------------------------------------------------------------
    def _program(self) -> Program:
        x, y, z = self._builder.grid_idx
        return (int(x), int(y), int(z))

    def _is_lib(self, code: CodeType) -> bool:
        lib = self._code_is_lib.get(code)
        if lib is None:
            lib = self._code_is_lib[code] = os.path.abspath(code.co_filename).startswith(self._lib_dirs)
        return lib

    def _kernel_line(self) -> tuple[str, int]:
        """The innermost kernel source line (outside Triton, numpy and kernelscope) running now."""
        f = sys._getframe(2)
        while f is not None and self._is_lib(f.f_code):
            f = f.f_back  # type: ignore[assignment]
        if f is None:
            return "", 0
        return display_path(f.f_code.co_filename), f.f_lineno

    def _launch_lines(self, callers: int = MAX_CALLERS) -> list[tuple[str, int]]:
        """The innermost user line (DESIGN.md) that launched the kernel, then up to ``callers`` user lines
        above it (innermost first): one launch line called from two places is told apart by them. Without
        a user line, the innermost non-library line."""
        f = sys._getframe(2)
        fallback: tuple[str, int] | None = None
        out: list[tuple[str, int]] = []
        while f is not None and len(out) <= callers:
            name = f.f_code.co_filename
            if is_user_file(name):
                out.append((display_path(name), f.f_lineno))
                if f.f_code.co_name == "<module>":
                    break  # the program's top: what runs it is not the program
            elif fallback is None and not out and not self._is_lib(f.f_code) and not name.startswith("<"):
                fallback = (display_path(name), f.f_lineno)
            f = f.f_back  # type: ignore[assignment]
        return out or [fallback or ("", 0)]


def _unique(a: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """np.unique, without the sort for the usual case of ascending addresses."""
    if a.size < 2:
        return a
    step = a[1:] >= a[:-1]
    if not bool(step.all()):
        return np.unique(a)
    keep = np.empty(a.size, dtype=bool)
    keep[0] = True
    np.not_equal(a[1:], a[:-1], out=keep[1:])
    return a[keep]


def _arg_info(name: str, tensor: Any) -> ArgInfo:
    # a TensorWrapper (tl.reinterpret: same memory, another dtype) keeps the tensor in .base
    base = tensor.base if type(tensor).__name__ == "TensorWrapper" else tensor
    storage = base.untyped_storage()
    lo = int(storage.data_ptr())
    return ArgInfo(
        name=name,
        base=int(tensor.data_ptr()),
        storage_lo=lo,
        storage_hi=lo + int(storage.nbytes()),
        itemsize=int(base.element_size()),
        shape=tuple(int(s) for s in base.shape),
        dtype=str(getattr(tensor, "dtype", base.dtype)).replace("torch.", ""),
    )


def _which_arg(args: list[ArgInfo], tag: str | None, live: npt.NDArray[np.uint64], itemsize: int) -> ArgInfo:
    """The argument a pointer block came from: its tag, else the storage holding most lanes, else the nearest."""
    if tag is not None:
        for a in args:
            if a.name == tag:
                return a
    counts = [int(a.contains(live, itemsize).sum()) for a in args]
    best = int(np.argmax(counts))
    if counts[best] > 0:
        return args[best]
    lo = int(live.min())
    return min(args, key=lambda a: min(abs(lo - a.storage_lo), abs(lo - a.storage_hi)))
