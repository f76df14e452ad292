"""A jitted MLP training step in JAX (CPU is enough): ``kernelscope run examples/jax_mlp_train.py``."""

from __future__ import annotations

import itertools
import sys

import jax
import jax.numpy as jnp


def dense(params: dict[str, jax.Array], x: jax.Array) -> jax.Array:
    return x @ params["w"] + params["b"]


def mlp(layers: list[dict[str, jax.Array]], x: jax.Array) -> jax.Array:
    h = jax.nn.relu(dense(layers[0], x))
    h = jax.nn.relu(dense(layers[1], h))
    return dense(layers[2], h)


def loss_fn(layers: list[dict[str, jax.Array]], x: jax.Array, y: jax.Array) -> jax.Array:
    logits = mlp(layers, x)
    return jnp.mean(jax.nn.logsumexp(logits, axis=-1) - jnp.take_along_axis(logits, y[:, None], axis=-1)[:, 0])


@jax.jit
def train_step(
    layers: list[dict[str, jax.Array]], x: jax.Array, y: jax.Array
) -> tuple[list[dict[str, jax.Array]], jax.Array]:
    loss, grads = jax.value_and_grad(loss_fn)(layers, x, y)
    new = jax.tree_util.tree_map(lambda p, g: p - 0.01 * g, layers, grads)
    return new, loss


def init(key: jax.Array, sizes: list[int]) -> list[dict[str, jax.Array]]:
    layers = []
    for n_in, n_out in itertools.pairwise(sizes):
        key, sub = jax.random.split(key)
        layers.append({"w": jax.random.normal(sub, (n_in, n_out)) / n_in**0.5, "b": jnp.zeros((n_out,))})
    return layers


def main(steps: int = 20) -> None:
    key = jax.random.PRNGKey(0)
    layers = init(key, [512, 1024, 1024, 10])
    x = jax.random.normal(key, (256, 512))
    y = jax.random.randint(key, (256,), 0, 10)
    for _ in range(steps):
        layers, loss = train_step(layers, x, y)
    print(f"loss {float(loss):.4f}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 20)
