"""The call-site recorder of live JAX runs: it notes top-level calls of the program's jitted functions and is
otherwise invisible (results, lower(), __wrapped__, methods, decorator factories, library functions)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any

import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402

from kernelscope.collect.jax_calls import CallSites  # noqa: E402


@pytest.fixture
def sites() -> Iterator[CallSites]:
    s = CallSites()
    s.install(jax)
    try:
        yield s
    finally:
        s.remove()


def test_top_level_calls_are_noted_with_their_lines_and_nothing_else_changes(sites: CallSites) -> None:
    def double(x: Any) -> Any:
        return x * 2

    jitted = jax.jit(double)
    assert jitted.__wrapped__ is double and jitted.__name__ == "double"
    first = sys._getframe().f_lineno + 1
    out = jitted(jnp.arange(3.0))
    jitted(jnp.arange(3.0))
    assert out.tolist() == [0.0, 2.0, 4.0]
    assert "mul" in jitted.lower(jnp.arange(3.0)).as_text()  # JAX's own methods still answer
    lines = [stack[-1][1] for stack in sites.calls["double"]]
    assert lines == [first, first + 1]
    assert sites.calls["double"][0][-1][2].endswith(
        "test_top_level_calls_are_noted_with_their_lines_and_nothing_else_changes"
    )


def test_calls_while_tracing_another_function_are_not_counted(sites: CallSites) -> None:
    @jax.jit
    def inner(x: Any) -> Any:
        return x + 1

    @jax.jit
    def outer(x: Any) -> Any:
        return inner(x) * 3

    assert outer(jnp.ones(2)).tolist() == [6.0, 6.0]
    assert len(sites.calls["outer"]) == 1 and "inner" not in sites.calls  # inner ran inside outer's trace


def test_methods_factories_and_library_functions(sites: CallSites) -> None:
    from functools import partial

    class Model:
        scale = 3.0

        @partial(jax.jit, static_argnums=0)  # a method: bound to its instance as JAX's object binds it
        def apply(self, x: Any) -> Any:
            return x * self.scale

    @partial(jax.jit, static_argnums=1)
    def power(x: Any, n: int) -> Any:
        return x**n

    @jax.jit(static_argnames="n")
    def times(x: Any, n: int) -> Any:
        return x * n

    assert Model().apply(jnp.ones(2)).tolist() == [3.0, 3.0]
    assert power(jnp.full(2, 2.0), 3).tolist() == [8.0, 8.0]
    assert times(jnp.ones(2), n=4).tolist() == [4.0, 4.0]
    assert {k: len(v) for k, v in sites.calls.items()} == {"apply": 1, "power": 1, "times": 1}
    # a library's function (jax's own jnp.tanh, jitted here) is left as JAX made it
    assert type(jax.jit(jnp.tanh)).__name__ == "PjitFunction"


def test_remove_restores_jax_jit() -> None:
    original = jax.jit
    s = CallSites()
    s.install(jax)
    assert jax.jit is not original
    s.remove()
    assert jax.jit is original
