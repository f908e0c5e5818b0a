# Wrong answer: the gradient of the mean loss over the batch, copied to every example: the
# average of the per-example gradients, right only when every example has the same one.
import jax
import jax.numpy as jnp


def batch_loss(w, xs, ys):
    return jnp.mean(0.5 * jnp.sum((jnp.tanh(xs.T @ w) - ys) ** 2, axis=-1))


def per_example_grads(w, xs, ys):
    g = jax.grad(batch_loss)(w, xs, ys)
    return jnp.broadcast_to(g[..., None], w.shape + (ys.shape[0],))
