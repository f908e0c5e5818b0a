# Wrong answer: w @ h.T instead of h @ w, transposed back: the layers compute h @ w.T,
# right only for symmetric weights.
import jax
import jax.numpy as jnp


@jax.checkpoint
def layer(h, w):
    return jnp.tanh(w @ h.T).T, None


def deep_loss(ws, x):
    h, _ = jax.lax.scan(layer, x, ws)
    return jnp.sum(h ** 2)
