# Runtime error: vmap's default in_axes=0 maps over w too, and over axis 0 of xs (its
# features, not its examples): the mapped axes have different sizes (in_dim and B), and
# vmap raises a ValueError ("vmap got inconsistent sizes for array axes to be mapped").
import jax
import jax.numpy as jnp


def example_loss(w, x, y):
    return 0.5 * jnp.sum((jnp.tanh(x @ w) - y) ** 2)


def per_example_grads(w, xs, ys):
    return jax.vmap(jax.grad(example_loss), out_axes=-1)(w, xs, ys)
