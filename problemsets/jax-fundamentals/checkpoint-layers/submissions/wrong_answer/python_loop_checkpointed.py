# Wrong answer: each layer checkpointed, but applied in a Python loop: the program is
# unrolled into K copies of the layer (and of its backward pass), which grows with the
# depth; the judge's compiled gradient has no loop left (probe gradient-memory).
import jax
import jax.numpy as jnp


@jax.checkpoint
def layer(h, w):
    return jnp.tanh(h @ w)


def deep_loss(ws, x):
    h = x
    for k in range(ws.shape[0]):
        h = layer(h, ws[k])
    return jnp.sum(h ** 2)
