# Wrong answer: the right numbers from a Python loop over the examples, stacked along the
# last axis. The program is unrolled into B copies of the gradient, each slicing out its
# example, joined by a concatenate (probe one-batched-program); with one example there is
# nothing to slice, so only the tests with several examples catch it.
import jax
import jax.numpy as jnp


def example_loss(w, x, y):
    return 0.5 * jnp.sum((jnp.tanh(x @ w) - y) ** 2)


def per_example_grads(w, xs, ys):
    grad = jax.grad(example_loss)
    return jnp.stack([grad(w, xs[:, b], ys[b]) for b in range(ys.shape[0])], axis=-1)
