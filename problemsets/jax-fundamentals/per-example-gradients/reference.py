"""Reference: jax.grad of one example's loss, vmapped over the examples. in_axes=(None, 1, 0):
w is shared (not mapped), the batch is axis 1 of xs (feature-major) and axis 0 of ys;
out_axes=-1 puts the batch last in the result."""

import jax
import jax.numpy as jnp


def example_loss(w, x, y):
    # one example: x (in_dim,), y (out_dim,)
    return 0.5 * jnp.sum((jnp.tanh(x @ w) - y) ** 2)


def per_example_grads(w, xs, ys):
    return jax.vmap(jax.grad(example_loss), in_axes=(None, 1, 0), out_axes=-1)(w, xs, ys)
