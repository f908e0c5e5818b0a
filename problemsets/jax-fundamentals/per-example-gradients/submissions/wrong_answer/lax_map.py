# Wrong answer: the right numbers from jax.lax.map, which runs the examples one after the
# other in a while loop instead of batching them: the judge's compiled program has a
# while operation (probe one-batched-program), on every test.
import jax
import jax.numpy as jnp


def example_loss(w, x, y):
    return 0.5 * jnp.sum((jnp.tanh(x @ w) - y) ** 2)


def per_example_grads(w, xs, ys):
    grads = jax.lax.map(lambda xy: jax.grad(example_loss)(w, *xy), (xs.T, ys))  # (B, in, out)
    return jnp.moveaxis(grads, 0, -1)
