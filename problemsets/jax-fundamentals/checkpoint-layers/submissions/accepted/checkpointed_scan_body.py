# Accepted: jax.checkpoint applied to the scan's whole step function (a lambda), which is
# the same rematerialisation as decorating the layer.
import jax
import jax.numpy as jnp


def deep_loss(ws, x):
    step = jax.checkpoint(lambda h, w: (jnp.tanh(jnp.dot(h, w)), None))
    final, _ = jax.lax.scan(step, x, ws)
    return (final * final).sum()
