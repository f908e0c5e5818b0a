# Wrong answer: the values are clipped instead of their gradient. The loss changes wherever
# |x @ w| > 1, and the gradient vanishes there instead of being capped.
import jax.numpy as jnp


def loss(w, x):
    return jnp.sum(jnp.clip(x @ w, -1.0, 1.0) ** 2)
