"""Where each call of a jitted function came from, at run time (live JAX runs only).

An XLA executable's HLO carries the Python stack of its *first trace* only: a second call site with the
same input signature reuses the executable, so the HLO alone would put the evaluation calls of a training
step under the training loop's line. While a live run records, ``jax.jit`` is wrapped so that each call of
a jitted function *the program defined* (its code is a user file) notes the user frames of the caller;
library functions and functions jitted before recording began are left untouched. The wrapper forwards
everything to JAX's own jitted object (attributes, ``lower``, method binding) and changes nothing it computes;
a call made while tracing another function (its arguments are tracers) executes nothing and is not counted.
Cost: one frame walk per call (``benchmarks/bench_jax_calls.py``; figures in benchmarks/README-jax.md).
The XPlane import then pairs the k-th recorded call of a function with its k-th execution (see
``importers.xplane.callsites``).
"""

from __future__ import annotations

import functools
import sys
from collections import defaultdict
from collections.abc import Callable
from typing import Any

from ..attribute.userframes import is_user_file

# (file, line, function) of each user frame, outermost first
Stack = tuple[tuple[str, int, str], ...]


class CallSites:
    """Records the user stack of every top-level call of the program's jitted functions, by function name."""

    def __init__(self) -> None:
        self.calls: dict[str, list[Stack]] = defaultdict(list)
        self._user: dict[str, bool] = {}
        self._stacks: dict[Stack, Stack] = {}  # one object per distinct stack: a long loop holds references only
        self._undo: Callable[[], None] | None = None
        self.eager: set[str] = set()  # the names in ``calls`` of primitives run eagerly (``jit(stage)``, ...)

    def install(self, jax: Any) -> None:
        original = jax.jit
        sites = self

        @functools.wraps(original)
        def jit(fun: Any = _NOT_GIVEN, /, **options: Any) -> Any:
            if fun is _NOT_GIVEN:  # @jax.jit(static_argnums=...): a decorator
                return lambda f: jit(f, **options)
            wrapped = original(fun, **options)
            code = getattr(fun, "__code__", None)
            if code is None or not sites._is_user(code.co_filename):
                return wrapped
            return _Recorded(wrapped, getattr(fun, "__name__", ""), sites, jax.core.Tracer)

        jax.jit = jit
        undo: list[Callable[[], None]] = [lambda: setattr(jax, "jit", original)]
        # An op run eagerly, outside any jit (``jnp.asarray`` of the program's NumPy data: ``jit(stage)``), is an
        # executable with no source in its HLO: its caller is noted here, as a jitted function's is. Staging
        # flax_mnist's arrays took 18 ms of a cold first run, 5.5% of its time, on no user line.
        dispatch: Any = sys.modules.get("jax._src.dispatch")
        apply = getattr(dispatch, "apply_primitive", None)
        if dispatch is not None and callable(apply):

            @functools.wraps(apply)
            def apply_primitive(prim: Any, *args: Any, **params: Any) -> Any:
                name = getattr(prim, "name", "")
                sites.eager.add(name)
                sites.record(name)
                return apply(prim, *args, **params)

            dispatch.apply_primitive = apply_primitive
            undo.append(lambda: setattr(dispatch, "apply_primitive", apply))

        def undo_all() -> None:
            for u in undo:
                u()

        self._undo = undo_all

    def remove(self) -> None:
        if self._undo is not None:
            self._undo()
            self._undo = None

    def _is_user(self, file: str) -> bool:
        hit = self._user.get(file)
        if hit is None:
            hit = self._user[file] = is_user_file(file)
        return hit

    def record(self, name: str) -> None:
        frames: list[tuple[str, int, str]] = []
        f = sys._getframe(2)
        while f is not None:
            code = f.f_code
            if self._is_user(code.co_filename):
                frames.append((code.co_filename, f.f_lineno, getattr(code, "co_qualname", code.co_name)))
            f = f.f_back  # type: ignore[assignment]
        frames.reverse()
        stack = tuple(frames)
        self.calls[name].append(self._stacks.setdefault(stack, stack))


class _Recorded:
    """A jitted function that notes its callers; everything else goes to JAX's jitted object."""

    def __init__(self, fn: Any, name: str, sites: CallSites, tracer: type) -> None:
        self.__dict__["_ks"] = (fn, name, sites, tracer)
        functools.update_wrapper(self, fn)  # type: ignore[arg-type]
        self.__wrapped__ = getattr(fn, "__wrapped__", fn)  # the program's function, as JAX's object gives it

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        fn, name, sites, tracer = self.__dict__["_ks"]
        # (a shallow look: a tracer inside a pytree argument slips through, and the count check at import
        # then falls back to the first trace's line for that function)
        if not any(isinstance(x, tracer) for x in args) and not any(isinstance(x, tracer) for x in kwargs.values()):
            sites.record(name)
        return fn(*args, **kwargs)

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        if obj is None:
            return self
        return functools.partial(self.__call__, obj)

    def __getattr__(self, attr: str) -> Any:
        return getattr(self.__dict__["_ks"][0], attr)


_NOT_GIVEN = object()

__all__ = ["CallSites", "Stack"]
