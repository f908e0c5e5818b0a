# Wrong answer: the scan is right and so is every value, but without jax.checkpoint the
# backward pass keeps every layer's activations: about 2.5 times the reference's temporary
# memory in the judge's compiled gradient (probe gradient-memory).
import jax
import jax.numpy as jnp


def deep_loss(ws, x):
    h, _ = jax.lax.scan(lambda h, w: (jnp.tanh(h @ w), None), x, ws)
    return jnp.sum(h ** 2)
