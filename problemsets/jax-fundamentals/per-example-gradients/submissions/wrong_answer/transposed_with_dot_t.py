# Wrong answer: vmap with the default out_axes=0 gives (B, in_dim, out_dim), and .T
# reverses every axis: (out_dim, in_dim, B), not (in_dim, out_dim, B). Right only when
# in_dim and out_dim are both 1; out_axes=-1 (or jnp.moveaxis) is the fix.
import jax
import jax.numpy as jnp


def example_loss(w, x, y):
    return 0.5 * jnp.sum((jnp.tanh(x @ w) - y) ** 2)


def per_example_grads(w, xs, ys):
    return jax.vmap(jax.grad(example_loss), in_axes=(None, 1, 0))(w, xs, ys).T
